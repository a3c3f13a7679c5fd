import Foundation
import HubCore
import Hummingbird
import Logging
import NIOCore

/// An RFC 9457 problem a handler throws; ``ProblemMiddleware`` renders it as
/// `application/problem+json` `{type, title, status, detail, errors?}`.
///
/// `type` is a stable URI under ``Problem/typeBase`` that clients may switch on; `detail` says
/// what went wrong and what to do. Never put secrets or tokens in `detail`.
struct Problem: Error, Sendable {
    /// A problem type: its URI slug, title and HTTP status.
    struct Kind: Sendable, Hashable {
        let slug: String
        let title: String
        let status: HTTPResponse.Status

        static let invalidRequest = Kind(slug: "invalid-request", title: "Invalid request", status: .badRequest)
        static let invalidCursor = Kind(slug: "invalid-cursor", title: "Invalid cursor", status: .badRequest)
        static let invalidSubscription = Kind(
            slug: "invalid-subscription", title: "Invalid subscription ID", status: .badRequest)
        static let unauthorized = Kind(slug: "unauthorized", title: "Unauthorized", status: .unauthorized)
        static let forbidden = Kind(slug: "forbidden", title: "Forbidden", status: .forbidden)
        static let notFound = Kind(slug: "not-found", title: "Not found", status: .notFound)
        static let notConfigured = Kind(slug: "not-configured", title: "Not configured", status: .notFound)
        static let methodNotAllowed = Kind(
            slug: "method-not-allowed", title: "Method not allowed", status: .methodNotAllowed)
        static let conflict = Kind(slug: "conflict", title: "Conflict", status: .conflict)
        static let payloadTooLarge = Kind(
            slug: "payload-too-large", title: "Payload too large", status: .contentTooLarge)
        static let bodyTooLarge = Kind(slug: "body-too-large", title: "Body too large", status: .contentTooLarge)
        static let batchTooLarge = Kind(slug: "batch-too-large", title: "Batch too large", status: .contentTooLarge)
        static let uriTooLong = Kind(slug: "uri-too-long", title: "URI too long", status: .uriTooLong)
        static let headerFieldsTooLarge = Kind(
            slug: "header-fields-too-large", title: "Request header fields too large",
            status: .requestHeaderFieldsTooLarge)
        static let unsupportedMediaType = Kind(
            slug: "unsupported-media-type", title: "Unsupported media type", status: .unsupportedMediaType)
        static let unavailable = Kind(slug: "unavailable", title: "Service unavailable", status: .serviceUnavailable)
        static let rateLimited = Kind(slug: "rate-limited", title: "Too many requests", status: .tooManyRequests)
        static let unsupported = Kind(slug: "unsupported", title: "Not implemented", status: .notImplemented)
        static let internalError = Kind(
            slug: "internal-error", title: "Internal server error", status: .internalServerError)
    }

    /// Where problem type URIs live.
    static let typeBase = "https://notificationhub.dev/problems/"

    var kind: Kind
    var detail: String
    var errors: [HubError.FieldError]
    var headers: HTTPFields

    init(_ kind: Kind, _ detail: String, errors: [HubError.FieldError] = [], headers: HTTPFields = [:]) {
        self.kind = kind
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    /// A 401 with `WWW-Authenticate: Bearer`, as RFC 6750 asks.
    static func unauthorized(_ detail: String) -> Problem {
        Problem(.unauthorized, detail, headers: [.wwwAuthenticate: "Bearer realm=\"notificationhub\""])
    }

    /// A 503 for a request that waited (long-poll) while the server began to shut down: retry with
    /// the same cursor after `Retry-After`; the connection closes.
    /// A long-poll or event stream on a connection that cannot park it: the router is served
    /// by a server built without ``GuardedHTTP1Channel`` (waiting requests park in its pipeline).
    static let cannotWait = Problem(
        .unavailable,
        "This server cannot hold waiting requests: serve the hub's router with `.hubHTTP1` (as `hub serve` does), or poll without `wait` and `Accept: text/event-stream`."
    )

    static let shuttingDown = Problem(
        .unavailable, "The hub is shutting down. Retry with the same cursor after Retry-After seconds.",
        headers: [.retryAfter: "1", .connection: "close"])

    /// The problem of a ``HubError``, by its stable code.
    init(_ error: HubError) {
        let kind: Kind =
            switch error.code {
            case .invalidRequest: .invalidRequest
            case .notFound: .notFound
            case .notConfigured: .notConfigured
            case .payloadTooLarge: .payloadTooLarge
            case .conflict: .conflict
            case .unavailable: .unavailable
            case .unsupported: .unsupported
            default: Kind(slug: error.code.rawValue, title: "Hub error", status: .internalServerError)
            }
        self.init(kind, error.message, errors: error.fieldErrors)
        if kind == .unavailable { headers[.retryAfter] = "1" }
    }

    /// The JSON body.
    struct Body: Encodable, Sendable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let errors: [HubError.FieldError]?
    }

    /// The problem as an HTTP response.
    var response: Response {
        let (headers, body) = rendered
        return Response(status: kind.status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// The JSON body's fields.
    var body: Body {
        Body(
            type: Self.typeBase + kind.slug, title: kind.title, status: kind.status.code, detail: detail,
            errors: errors.isEmpty ? nil : errors)
    }

    /// The headers and body of ``response``.
    var rendered: (headers: HTTPFields, body: ByteBuffer) {
        let body = body
        var headers = headers
        headers[.contentType] = "application/problem+json"
        let data = (try? JSON.data(body)) ?? Data("{}".utf8)
        return (headers, ByteBuffer(bytes: data))
    }
}

/// Turns every error a handler throws into a problem response, so handlers just throw.
///
/// ``Problem`` renders as is; ``HubError`` maps by code (invalid-request 400, not-found and
/// not-configured 404, payload-too-large 413, conflict 409, unavailable 503); Hummingbird's own
/// errors (unknown route, too large body) keep their status; anything else is logged and answered
/// with a bare 500 `internal-error` that reveals nothing of the failure.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return Self.problem(for: error, context: context).response
        }
    }

    static func problem(for error: any Error, context: Context) -> Problem {
        problem(for: error, logger: context.logger, path: context.endpointPath)
    }

    /// ``problem(for:context:)`` outside a request's handler (a parked request's late answer).
    static func problem(for error: any Error, logger: Logger, path: String?) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let hubError as HubError:
            return Problem(hubError)
        case is NIOTooManyBytesError:
            return Problem(.bodyTooLarge, "The request body is larger than this server accepts.")
        case let httpError as HTTPError:
            return problem(status: httpError.status, message: httpError.body)
        case let responseError as any HTTPResponseError:
            return problem(status: responseError.status, message: nil)
        default:
            let requestID = logger[metadataKey: "hb.request.id"].map { "\($0)" } ?? "unknown"
            logger.error(
                "request failed", metadata: ["error": "\(String(reflecting: error))", "path": "\(path ?? "?")"])
            return Problem(
                .internalError,
                "The request failed unexpectedly; the server log has the details (request \(requestID)).")
        }
    }

    private static func problem(status: HTTPResponse.Status, message: String?) -> Problem {
        switch status {
        case .notFound:
            return Problem(.notFound, message ?? "There is no such resource; see /openapi.yaml for the API.")
        case .methodNotAllowed:
            return Problem(.methodNotAllowed, message ?? "This resource does not support the method.")
        case .contentTooLarge:
            return Problem(.bodyTooLarge, message ?? "The request body is larger than this server accepts.")
        case .badRequest:
            return Problem(.invalidRequest, message ?? "The request is malformed.")
        case .unauthorized:
            return .unauthorized(message ?? "Authentication is required.")
        default:
            let kind = Problem.Kind(
                slug: "http-\(status.code)", title: status.reasonPhrase.isEmpty ? "Error" : status.reasonPhrase,
                status: status)
            return Problem(kind, message ?? status.reasonPhrase)
        }
    }
}
