import Dispatch
import HubCore
import Hummingbird
import Metrics

// The server's metrics, through swift-metrics with stable names and labels:
//
// - `hub_http_requests_total{route,status}` and `hub_http_request_duration_seconds{route}`:
//   `route` is the route template (`/v1/apps/{app}/me/feed`), never a concrete path, so user IDs
//   never become label values; unknown routes count as `NotFound`.
// - `hub_publishes_total{app,result}`: `result` is `created`, `updated`, `unauthorized` (401),
//   `invalid` (other 4xx) or `failed` (5xx).
// - `hub_syncs_total{app,mode}`: `mode` is `poll`, `longpoll` or `sse` (one per stream).
//
// `app` labels only ever carry configured app IDs.

/// Counts requests by route template and status, and times them.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let status: HTTPResponse.Status
        do {
            let response = try await next(request, context)
            // A parked request records itself when it is answered (``ParkedRequestLog``).
            if response.headers.value(ParkingHandler.marker) != nil { return response }
            status = response.status
            Self.record(route: context.endpointPath, status: status, start: start)
            return response
        } catch {
            status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            Self.record(route: context.endpointPath, status: status, start: start)
            throw error
        }
    }

    static func record(route: String?, status: HTTPResponse.Status, start: UInt64) {
        let route = route ?? "NotFound"
        Counter(label: "hub_http_requests_total", dimensions: [("route", route), ("status", "\(status.code)")])
            .increment()
        Timer(label: "hub_http_request_duration_seconds", dimensions: [("route", route)])
            .recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
    }
}

enum HubMetrics {
    static func publish(app: String, result: String, count: Int = 1) {
        guard count > 0 else { return }
        Counter(label: "hub_publishes_total", dimensions: [("app", app), ("result", result)]).increment(by: count)
    }

    static func publishFailed(app: CrossDeviceApp, error: any Error) {
        let status: Int =
            switch error {
            case let problem as Problem: problem.kind.status.code
            case let hubError as HubError: Problem(hubError).kind.status.code
            default: 500
            }
        publish(app: app.id, result: status == 401 ? "unauthorized" : status < 500 ? "invalid" : "failed")
    }

    enum SyncMode: String {
        case poll, longpoll, sse
    }

    static func sync(app: String, mode: SyncMode) {
        Counter(label: "hub_syncs_total", dimensions: [("app", app), ("mode", mode.rawValue)]).increment()
    }
}
