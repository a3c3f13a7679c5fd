import Foundation
import HubCore
import Hummingbird
import Metrics
import NIOCore
import Prometheus

extension HubAPI {
    /// Operations routes, without authentication:
    ///
    /// - `GET /healthz`: 200 `{"status":"ok"}` while the process serves requests.
    /// - `GET /readyz`: 200 `{"status":"ready"}` when the store answers within a second, else 503
    ///   `unavailable` (within that second).
    /// - `GET /metrics`: the Prometheus text of `metrics`; 404 when the hub runs without one.
    /// - `GET /openapi.yaml`: the OpenAPI 3.1 document of this API.
    func addOperationRoutes(to router: HubRouter, metrics: PrometheusCollectorRegistry?) {
        router.get("/healthz") { _, _ in
            try JSON.response(StatusResource(status: "ok"))
        }
        router.get("/readyz") { _, context in
            do {
                try await hub.checkReadiness()
            } catch {
                context.logger.warning("readiness check failed", metadata: ["error": "\(error)"])
                throw Problem(.unavailable, "The store does not answer; see the server log.")
            }
            return try JSON.response(StatusResource(status: "ready"))
        }
        router.get("/metrics") { _, context in
            guard let metrics else {
                throw Problem(.notFound, "This hub runs without a Prometheus registry.")
            }
            // Queue depth is read from the store at scrape time, so every instance reports the shared outbox.
            do {
                let statistics = try await hub.deliveryStatistics()
                Gauge(label: "hub_outbox_pending").record(statistics.pending)
                Gauge(label: "hub_feed_waiters").record(hub.signals.waiterCount)
            } catch {
                context.logger.warning("reading the outbox depth failed", metadata: ["error": "\(error)"])
            }
            var bytes: [UInt8] = []
            metrics.emit(into: &bytes)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let document = Self.openAPIDocument
        router.get("/openapi.yaml") { _, _ in
            guard let document else {
                throw Problem(.notFound, "The OpenAPI document is missing from this build.")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
        }
    }

    /// `openapi.yaml` from the module's resources.
    static let openAPIDocument: [UInt8]? = Bundle.module.url(forResource: "openapi", withExtension: "yaml")
        .flatMap { try? Data(contentsOf: $0) }.map(Array.init)
}
