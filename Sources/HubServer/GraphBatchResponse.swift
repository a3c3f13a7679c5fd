import Foundation
import HubCore
import Hummingbird

/// An error of one request of a Graph batch, in Graph's (OData's) error shape:
/// `{"error": {"code", "message", "details": [{"code", "message", "target"}]}}`.
struct GraphError: Error, Sendable {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var details: [HubError.FieldError] = []
    var retryAfter: String?

    init(status: HTTPResponse.Status, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The error a request of a batch gets for `error`, as its own request would (the same
    /// status and message, with the fields in `details`).
    init(_ error: any Error, context: HubRequestContext) {
        if let graph = error as? GraphError {
            self = graph
            return
        }
        let problem = ProblemMiddleware<HubRequestContext>.problem(for: error, context: context)
        self.init(status: problem.kind.status, code: Self.code(problem.kind.status), message: problem.detail)
        details = problem.errors
        retryAfter = problem.headers[.retryAfter]
    }

    /// Graph's error code of a status.
    static func code(_ status: HTTPResponse.Status) -> String {
        switch status {
        case .badRequest: "BadRequest"
        case .unauthorized: "Unauthorized"
        case .forbidden: "Forbidden"
        case .notFound: "NotFound"
        case .methodNotAllowed: "MethodNotAllowed"
        case .contentTooLarge: "RequestEntityTooLarge"
        case .unsupportedMediaType: "UnsupportedMediaType"
        case .failedDependency: "FailedDependency"
        case .tooManyRequests: "TooManyRequests"
        case .serviceUnavailable: "ServiceUnavailable"
        default: "InternalServerError"
        }
    }
}

/// Graph's batch answer: `{"responses": [{"id", "status", "headers", "body"}]}`.
struct GraphBatchResponse: Encodable, Sendable {
    struct Item: Encodable, Sendable {
        enum Body: Encodable, Sendable {
            case notification(GraphNotificationResource)
            case error(GraphError)

            func encode(to encoder: any Encoder) throws {
                switch self {
                case .notification(let notification): try notification.encode(to: encoder)
                case .error(let error):
                    var container = encoder.singleValueContainer()
                    try container.encode(ErrorBody(error))
                }
            }
        }

        var id: String
        var status: Int
        var headers: [String: String]
        var body: Body

        var succeeded: Bool { (200..<300).contains(status) }

        init(id: String, status: Int, headers: [String: String], body: Body) {
            self.id = id
            self.status = status
            self.headers = headers
            self.body = body
        }

        static func failure(_ id: String, _ error: GraphError) -> Item {
            var headers = ["Content-Type": "application/json"]
            if let retryAfter = error.retryAfter { headers["Retry-After"] = retryAfter }
            return Item(id: id, status: error.status.code, headers: headers, body: .error(error))
        }
    }

    /// `{"error": {…}}`.
    private struct ErrorBody: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var target: String
        }
        struct Inner: Encodable {
            var code: String
            var message: String
            var details: [Detail]?
        }
        var error: Inner

        init(_ error: GraphError) {
            self.error = Inner(
                code: error.code, message: error.message,
                details: error.details.isEmpty
                    ? nil
                    : error.details.map { Detail(code: "InvalidValue", message: $0.message, target: $0.field) })
        }
    }

    var responses: [Item]
}

extension HTTPResponse.Status {
    /// 424: a request of a Graph batch whose dependency did not succeed.
    static let failedDependency = HTTPResponse.Status(code: 424, reasonPhrase: "Failed Dependency")
}
