public import HubWire

/// The one error type of ``HubClient``: a stable ``code`` to switch on, the hub's problem details
/// (`application/problem+json`) when it sent some, and the underlying error of a failed connection.
///
/// ```swift
/// do {
///     try await client.register(.polling(platform: .ios, appId: "com.contoso.notes"))
/// } catch let error as HubClientError where error.code == .unauthorized {
///     // The token provider's fresh token was refused too: sign the user in again.
/// } catch let error as HubClientError where error.code == .invalidRequest {
///     for field in error.fieldErrors { print(field.field, field.message) }
/// }
/// ```
public struct HubClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable across releases. A growing set: compare with `==` or `switch` with a
    /// `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The hub refused the user token, and a fresh one from the token provider as well.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// The admin routes are disabled, or the caller may not do this.
        public static let forbidden = Code(rawValue: "forbidden")
        /// No such app, endpoint or notification (also `not-configured` apps and app IDs).
        public static let notFound = Code(rawValue: "notFound")
        /// The request is malformed; ``HubClientError/fieldErrors`` lists every problem.
        public static let invalidRequest = Code(rawValue: "invalidRequest")
        /// The feed cursor was not issued for this user and app; the client syncs from the start.
        public static let invalidCursor = Code(rawValue: "invalidCursor")
        /// The body or payload is larger than the hub accepts.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// The state conflicts with the request.
        public static let conflict = Code(rawValue: "conflict")
        /// The hub or its store is unavailable for now; retry after ``HubClientError/retryAfter``.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The hub failed (a 5xx answer).
        public static let server = Code(rawValue: "server")
        /// The request did not reach the hub or its answer did not arrive (offline, DNS, TLS,
        /// timeout); see ``HubClientError/underlying``.
        public static let transport = Code(rawValue: "transport")
        /// The hub answered with something this client cannot read.
        public static let invalidResponse = Code(rawValue: "invalidResponse")
        /// The token provider threw; see ``HubClientError/underlying``.
        public static let tokenUnavailable = Code(rawValue: "tokenUnavailable")
        /// The client's storage could not save its state; see ``HubClientError/underlying``.
        public static let storage = Code(rawValue: "storage")

        public var description: String { rawValue }
    }

    /// One problem with one field of a request, as the hub listed it (the wire type the hub writes).
    public typealias FieldError = RequestFieldError

    public var code: Code
    /// What went wrong and what to do: the problem's `detail`, or a message of the client.
    public var message: String
    /// The HTTP status, when the hub answered.
    public var status: Int?
    /// The problem `type` URI, such as `https://notificationhub.dev/problems/invalid-request`.
    public var problemType: String?
    /// The problem `title`, such as `Invalid request`.
    public var title: String?
    /// Every field error of an ``Code/invalidRequest`` problem.
    public var fieldErrors: [FieldError]
    /// How long to wait before retrying, when the hub said so (`Retry-After`).
    public var retryAfter: Duration?
    /// The error beneath: a `URLError` for ``Code/transport``, the token provider's error for
    /// ``Code/tokenUnavailable``, a decoding error for ``Code/invalidResponse``.
    public var underlying: (any Error)?

    public init(
        _ code: Code, _ message: String, status: Int? = nil, problemType: String? = nil, title: String? = nil,
        fieldErrors: [FieldError] = [], retryAfter: Duration? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.problemType = problemType
        self.title = title
        self.fieldErrors = fieldErrors
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let status { text += " (HTTP \(status))" }
        if !fieldErrors.isEmpty {
            text += " [" + fieldErrors.map { "\($0.field): \($0.message)" }.joined(separator: "; ") + "]"
        }
        if let underlying { text += " — \(underlying)" }
        return text
    }

    /// Whether retrying the same request later may succeed: connection failures, 5xx answers and
    /// ``Code/unavailable``.
    public var isTransient: Bool {
        [.transport, .server, .unavailable].contains(code)
    }
}

extension HubClientError {
    /// The problem types of the hub (the slug after `/problems/`) and the codes they map to.
    static let codesByProblem: [String: Code] = [
        "invalid-request": .invalidRequest, "invalid-cursor": .invalidCursor, "invalid-subscription": .invalidRequest,
        "unauthorized": .unauthorized, "forbidden": .forbidden, "not-found": .notFound, "not-configured": .notFound,
        "method-not-allowed": .invalidRequest, "conflict": .conflict, "payload-too-large": .tooLarge,
        "body-too-large": .tooLarge, "unsupported-media-type": .invalidRequest, "unavailable": .unavailable,
        "internal-error": .server,
    ]

    /// The code of an answer: by problem type when the hub named a known one, else by status.
    static func code(status: Int, problemType: String?) -> Code {
        if let slug = problemType?.split(separator: "/").last, let code = codesByProblem[String(slug)] {
            return code
        }
        switch status {
        case 400, 405, 415, 422: return .invalidRequest
        case 401: return .unauthorized
        case 403: return .forbidden
        case 404, 410: return .notFound
        case 409: return .conflict
        case 413: return .tooLarge
        case 503: return .unavailable
        case 500...599: return .server
        default: return .invalidResponse
        }
    }
}
