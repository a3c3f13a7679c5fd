import Dispatch
import HubCore
import Hummingbird
import Logging

/// Logs one `info` line per request, `request`, with:
///
/// - `method`; `route`: the route template (`/v1/apps/{app}/me/feed`), `NotFound` for an unknown
///   path, never the raw path, so no user ID, notification ID or query string is logged;
/// - `status`; `duration_ms`: until the response head (a long-poll's wait included; an event
///   stream's lifetime is not). A request answered after its handler returned (a parked
///   long-poll, see ``ParkingHandler``) is logged when answered, `status` 499 if its client left first;
/// - `app`: the app of the path when it is a configured app ID (client input is never logged).
///
/// Tokens, keys, cursors, headers and bodies are never logged. Hummingbird's `hb.request.id`
/// ties the line to any other line the request logged.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let apps: Set<String>

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let response = try await next(request, context)
            // A parked request logs itself when it is answered (``ParkedRequestLog``).
            if response.headers.value(ParkingHandler.marker) != nil { return response }
            log(request, context, status: response.status.code, start: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            log(request, context, status: status.code, start: start)
            throw error
        }
    }

    private func log(_ request: Request, _ context: Context, status: Int, start: UInt64) {
        // Below `info` (a busy hub's usual level) the line is dropped: build nothing for it.
        guard context.logger.logLevel <= .info else { return }
        let app = context.parameters.get("app").flatMap({ try? Identifier.decodingPercentEscapes($0) })
        Self.log(
            context.logger, method: request.method.rawValue, route: context.endpointPath, status: status, start: start,
            app: app.flatMap { apps.contains($0) ? $0 : nil })
    }

    /// The line of one request; `app` only when it is a configured app ID.
    static func log(_ logger: Logger, method: String, route: String?, status: Int, start: UInt64, app: String?) {
        guard logger.logLevel <= .info else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
        var metadata: Logger.Metadata = [
            "method": "\(method)",
            "route": "\(route ?? "NotFound")",
            "status": "\(status)",
            "duration_ms": "\((elapsed * 10).rounded() / 10)",
        ]
        if let app { metadata["app"] = "\(app)" }
        logger.info("request", metadata: metadata)
    }
}
