import HTTPTypes
import Hummingbird

/// The limits on a request's head, and how a head over them is answered.
///
/// - A request target (path and query) over ``maxURLBytes`` gets 414 `uri-too-long`.
/// - A head over ``maxHeadBytes`` (the request line and all header fields together) or with more
///   than ``HTTP1HeadParser/maxFieldCount`` fields gets 431 `header-fields-too-large`, or 414 when
///   the request line alone was already over it.
/// - A head ``HTTP1HeadParser`` refuses gets 400 `invalid-request`, saying what is wrong.
///
/// All are `application/problem+json` answers, after which the connection is closed.
enum RequestHeadLimits {
    /// The longest request target, in bytes (8 KiB, as most proxies allow).
    static let maxURLBytes = 8 * 1024
    /// The largest request head, in bytes (80 KiB, NIO's decoder default).
    static let maxHeadBytes = HTTP1HeadParser.maxHeadBytes

    /// The header ``HTTP1ServerCodec`` marks the stand-in request of a refused head with
    /// (`414`, `431`, or `400` and the reason); ``HTTP1HeadParser`` strips it from every request a
    /// client sends, so only the codec can set it.
    static let marker = HTTPField.Name("X-Hub-Head-Error")!

    /// The problem of a request, when it is one of the handler's stand-ins or its target is too long.
    static func problem(for request: Request) -> Problem? {
        switch request.headers.value(marker) {
        case "414":
            return Problem(
                .uriTooLong,
                "The request line is longer than the \(maxHeadBytes) bytes this server reads; the URL must be at most \(maxURLBytes) bytes.",
                headers: [.connection: "close"])
        case "431":
            return Problem(
                .headerFieldsTooLarge,
                "The request head (request line and header fields) is larger than the \(maxHeadBytes) bytes this server reads.",
                headers: [.connection: "close"])
        case let value? where value.hasPrefix("400"):
            let reason = value.dropFirst(4)
            return Problem(
                .invalidRequest, reason.isEmpty ? "The request head is not valid HTTP/1.1." : String(reason),
                headers: [.connection: "close"])
        default:
            break
        }
        let target = request.uri.description.utf8.count
        guard target > maxURLBytes else { return nil }
        return Problem(
            .uriTooLong, "The URL is \(target) bytes; this server accepts at most \(maxURLBytes).")
    }
}

/// Answers the stand-in requests of ``HTTP1ServerCodec`` and targets over
/// ``RequestHeadLimits/maxURLBytes`` before any route or authentication runs.
struct RequestHeadLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let problem = RequestHeadLimits.problem(for: request) {
            context.coreContext.endpointPath.value = "RequestHead"
            return problem.response
        }
        return try await next(request, context)
    }
}
