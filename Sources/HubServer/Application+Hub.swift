public import HubCore
public import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
public import Prometheus
import Synchronization

/// The request context of the hub's routes.
public struct HubRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer of the connection (for the `clientIP` rate limit).
    public let remoteAddress: SocketAddress?
    /// The connection: for ``ConnectionCloseCallbacks`` and to park a request (``ParkingHandler``).
    let channel: any Channel
    var connection: ObjectIdentifier { ObjectIdentifier(channel) }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = CoreRequestContextStorage(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }
}

/// The router of the hub's HTTP API v1 (DESIGN §4): publisher, Graph-compatible, device, admin
/// and operations routes, with problem+json errors and request metrics, and the operator web
/// console at `/console` (HTML, signed in with the admin token).
///
/// Test it without a socket through HummingbirdTesting:
/// ```swift
/// let router = buildRouter(hub: hub, configuration: configuration, identity: identity, metrics: nil)
/// try await Application(router: router).test(.router) { client in
///     try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
/// }
/// ```
///
/// - Parameters:
///   - hub: the hub whose operations the routes expose.
///   - configuration: limits, the admin token and the cursor key.
///   - identity: verifies the user tokens of the device routes.
///   - metrics: served at `/metrics`; `nil` answers 404 there. The routes record their metrics
///     through swift-metrics whatever this is; the `hub` executable bootstraps the backend.
public func buildRouter(
    hub: Hub, configuration: HubServerConfiguration, identity: IdentityVerifier,
    metrics: PrometheusCollectorRegistry?
) -> Hummingbird.Router<HubRequestContext> {
    let api = HubAPI(hub: hub, configuration: configuration, identity: identity)
    let router = Hummingbird.Router(context: HubRequestContext.self)
    let cors = CORSPolicy(apps: hub.configuration.apps)
    // Middleware applies to routes added after it, and to the unknown-route responder.
    router.add(middleware: AccessLogMiddleware(apps: Set(hub.configuration.apps.map(\.id))))
    router.add(middleware: CORSMiddleware(policy: cors))
    router.add(middleware: RequestHeadLimitMiddleware())
    router.add(middleware: RequestMetricsMiddleware())
    router.add(middleware: ProblemMiddleware())
    router.add(middleware: RateLimitMiddleware(api: api))
    api.addOperationRoutes(to: router, metrics: metrics)
    api.addPublisherRoutes(to: router)
    api.addBatchRoutes(to: router)
    api.addGraphBatchRoute(to: router)
    api.addBroadcastRoutes(to: router)
    api.addUserDataRoutes(to: router)
    api.addDeviceRoutes(to: router)
    api.addAdminRoutes(to: router)
    api.addStatisticsRoutes(to: router)
    api.addConsoleRoutes(to: router)
    // After the routes: it wraps only the unknown-route responder (OPTIONS and 405 with Allow).
    router.add(middleware: RouteFallbackMiddleware(table: RouteTable(router.routes), cors: cors))
    return router
}

/// The HTTP server of the hub, bound to ``HubServerConfiguration/host`` and
/// ``HubServerConfiguration/port``. `hub serve` runs it in one `ServiceGroup` next to the
/// ``Hub`` service; graceful shutdown ends long-polls and event streams, then the server.
///
/// ```swift
/// let server = buildApplication(hub: hub, configuration: configuration, identity: identity,
///                               metrics: registry, logger: logger)
/// try await ServiceGroup(services: [hub, server], gracefulShutdownSignals: [.sigterm],
///                        logger: logger).run()
/// ```
///
/// Connections are held to ``HubServerConfiguration/connections`` (``ConnectionLimits``).
///
/// - Parameter onListening: called with the bound port once the server accepts connections
///   (useful with port 0).
public func buildApplication(
    hub: Hub, configuration: HubServerConfiguration, identity: IdentityVerifier,
    metrics: PrometheusCollectorRegistry?, logger: Logger,
    onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    Application(
        router: buildRouter(hub: hub, configuration: configuration, identity: identity, metrics: metrics),
        server: .hubHTTP1(
            connections: configuration.connections, trustedProxies: configuration.trustedProxies, logger: logger),
        configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port)),
        onServerRunning: { channel in await onListening(channel.localAddress?.port ?? configuration.port) },
        logger: logger)
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with the hub's answers to request heads over its limits (414 and 431 as
    /// problem+json instead of a bare 400; see `RequestHeadLimits`) and the default
    /// ``ConnectionLimits``. Pass it to an `Application`
    /// built around ``buildRouter(hub:configuration:identity:metrics:)``.
    public static var hubHTTP1: HTTPServerBuilder {
        hubHTTP1(connections: ConnectionLimits())
    }

    /// ``hubHTTP1`` with the timeouts and caps of `connections` (see ``ConnectionLimits``);
    /// `trustedProxies` are exempt from its cap per client.
    public static func hubHTTP1(
        connections: ConnectionLimits, trustedProxies: [String] = [], logger: Logger = Logger(label: "hub")
    ) -> HTTPServerBuilder {
        hubHTTP1WithGate(connections: connections, trustedProxies: trustedProxies, logger: logger).builder
    }

    /// ``hubHTTP1(connections:trustedProxies:logger:)`` and the server's `RequestGate`, for tests
    /// that watch the requests it holds back.
    static func hubHTTP1WithGate(
        connections: ConnectionLimits, trustedProxies: [String] = [], logger: Logger = Logger(label: "hub")
    ) -> (builder: HTTPServerBuilder, gate: RequestGate) {
        let registry = ConnectionRegistry(limits: connections, trustedProxies: trustedProxies, logger: logger)
        let gate = RequestGate(limit: connections.maxActiveRequests)
        let builder = HTTPServerBuilder { responder in
            GuardedHTTP1Channel(responder: responder, registry: registry, gate: gate)
        }
        return (builder, gate)
    }
}

/// What every route handler needs. One reference wide: a parked long-poll or event stream keeps
/// a copy, and the server's configuration is not copied into each (docs/benchmarks.md, "Waiting").
struct HubAPI: Sendable {
    private final class Storage: Sendable {
        let hub: Hub
        let configuration: HubServerConfiguration
        let identity: IdentityVerifier
        let tokens: TokenCodec
        /// The inbound rate limits' buckets: ``RateLimitMiddleware`` charges each request, a batch
        /// publish its further items.
        let limiter: RateLimiter
        /// The logger parked requests share (see ``HubAPI/sharedLogger(like:without:)``).
        let parkedLogger = Mutex<Logger?>(nil)

        init(hub: Hub, configuration: HubServerConfiguration, identity: IdentityVerifier) {
            self.hub = hub
            self.configuration = configuration
            self.identity = identity
            self.tokens = TokenCodec(key: configuration.cursorKey)
            self.limiter = RateLimiter(clock: hub.clock)
        }
    }
    private let storage: Storage

    var hub: Hub { storage.hub }
    var configuration: HubServerConfiguration { storage.configuration }
    var identity: IdentityVerifier { storage.identity }
    var tokens: TokenCodec { storage.tokens }
    var limiter: RateLimiter { storage.limiter }

    init(hub: Hub, configuration: HubServerConfiguration, identity: IdentityVerifier) {
        self.storage = Storage(hub: hub, configuration: configuration, identity: identity)
    }

    /// A logger like a request's `logger` without the metadata `key` (its request ID), made once
    /// and shared by the requests that wait (every request's logger is the server's with its ID).
    func sharedLogger(like logger: Logger, without key: String) -> Logger {
        storage.parkedLogger.withLock { shared in
            if let shared { return shared }
            var made = logger
            made[metadataKey: key] = nil
            shared = made
            return made
        }
    }
}

/// The router type of the hub's routes (`Router` alone would be HubCore's).
typealias HubRouter = Hummingbird.Router<HubRequestContext>
