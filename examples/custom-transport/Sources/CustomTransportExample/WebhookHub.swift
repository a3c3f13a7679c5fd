public import AsyncHTTPClient
public import HubCore
import HubPolling
import HubSQLite
public import HubServer
public import Logging
public import ServiceLifecycle

/// A hub embedded in your own process, with the webhook transport next to polling: `HubCore` for
/// the model and the dispatcher, `HubSQLite` for the store, `HubServer` for the HTTP API, all run
/// by one `ServiceGroup` with graceful shutdown.
///
/// ```swift
/// let hub = try await WebhookHub(
///     apps: [notes], webhook: .init(url: relayURL, secret: webhookSecret),
///     databasePath: "hub.sqlite", server: HubServerConfiguration(port: 8080, cursorKey: cursorKey),
///     logger: Logger(label: "notes-hub"))
/// try await hub.run()   // until SIGTERM / SIGINT, then drain in-flight sends and exit
/// ```
///
/// Devices register with `transport: webhook` (and a token the receiver knows) or
/// `transport: polling`; everything else — publishing, the feed, universal dismiss — is the hub's
/// HTTP API as usual.
public struct WebhookHub: Sendable {
    /// The embedded hub: publish, register and sync through it directly, or over HTTP.
    public let hub: Hub
    /// The HTTP API server.
    public let server: any Service
    public let logger: Logger

    /// Builds the hub and its HTTP server; nothing runs until ``run()``.
    ///
    /// - Parameters:
    ///   - apps: the cross-device apps the hub serves.
    ///   - webhook: where the webhook transport posts, and its signing secret.
    ///   - databasePath: the SQLite database; `nil` keeps everything in memory (tests, demos).
    ///   - server: where the HTTP API listens, and its limits and keys.
    ///   - httpClient: the client the webhook transport posts with.
    /// - Throws: when the database cannot be opened or migrated, the apps conflict, or an identity
    ///   registration's keys cannot be loaded.
    public init(
        apps: [CrossDeviceApp], webhook: WebhookTransport.Configuration, databasePath: String?,
        server: HubServerConfiguration, httpClient: HTTPClient = .shared, logger: Logger
    ) async throws {
        let store = try databasePath.map { try SQLiteStore(path: $0) } ?? SQLiteStore.inMemory()
        try await store.migrate()
        // The polling transport wakes long-polls through the hub's signals: share one instance.
        let signals = FeedSignals()
        let transports: [any Transport] = [
            WebhookTransport(configuration: webhook, httpClient: httpClient),
            PollingTransport(signals: signals),
        ]
        hub = try Hub(
            configuration: HubConfiguration(apps: apps), store: store, transports: transports, signals: signals,
            logger: logger)
        let identity = IdentityVerifier(apps: apps, httpClient: httpClient)
        try await identity.loadKeys()
        self.server = buildApplication(
            hub: hub, configuration: server, identity: identity, metrics: nil, logger: logger)
        self.logger = logger
    }

    /// Runs the hub and its server until SIGTERM or SIGINT (or the task is cancelled), then shuts
    /// down gracefully: the server stops taking requests and ends long-polls, the dispatcher
    /// finishes its in-flight sends.
    public func run() async throws {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [hub, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
