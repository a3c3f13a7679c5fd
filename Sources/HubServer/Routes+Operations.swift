import Foundation
import HubCore
import Hummingbird
import Metrics
import NIOCore
import Prometheus

/// The paths of the probes and the scrape: their routes, and the requests the ``RequestGate``
/// never holds back.
enum OperationPaths {
    static let health = "/healthz"
    static let ready = "/readyz"
    static let metrics = "/metrics"
    static let all = [health, ready, metrics]
}

extension HubAPI {
    /// Operations routes, without authentication:
    ///
    /// - `GET /healthz`: 200 `{"status":"ok"}` while the process serves requests.
    /// - `GET /readyz`: 200 `{"status":"ready"}` when the store answers within a second, else 503
    ///   `unavailable` (within that second).
    /// - `GET /metrics`: the Prometheus text of `metrics` (``MetricsExposition``); 404 when the hub
    ///   runs without one here (or serves it on a listener of its own, ``buildMetricsApplication``).
    /// - `GET /openapi.yaml`: the OpenAPI 3.1 document of this API.
    func addOperationRoutes(to router: HubRouter, metrics: PrometheusCollectorRegistry?) {
        router.get(RouterPath(OperationPaths.health)) { _, _ in
            try JSON.response(StatusResource(status: "ok"))
        }
        router.get(RouterPath(OperationPaths.ready)) { _, context in
            do {
                try await hub.checkReadiness()
            } catch {
                context.logger.warning("readiness check failed", metadata: ["error": "\(error)"])
                throw Problem(.unavailable, "The store does not answer; see the server log.")
            }
            return try JSON.response(StatusResource(status: "ready"))
        }
        router.get(RouterPath(OperationPaths.metrics)) { _, context in
            guard let metrics else {
                throw Problem(
                    .notFound,
                    "This listener does not serve metrics: the hub runs without a registry, or serves /metrics on server.metricsListen."
                )
            }
            return await MetricsExposition.response(hub: hub, registry: metrics, logger: context.logger)
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
