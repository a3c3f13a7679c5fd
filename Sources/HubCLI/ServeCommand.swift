import ArgumentParser
import Foundation
import HubConfig
import HubCore
import HubPolling
import HubPostgres
import HubSQLite
import HubServer
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the hub: HTTP API, dispatcher and sweeper, until SIGTERM or SIGINT (then drain and exit 0).")

    @OptionGroup var options: ConfigOption
    @Flag(help: "Serve the API without sending deliveries; another instance on the same store sends them.")
    var noDispatch = false

    func run() async throws {
        MallocTuning.apply()
        let file = try options.loadOrExit()
        LogBootstrap.bootstrap(file.logging)
        let logger = Logger(label: "hub")
        logger.info("hub \(HubVersion.current)", metadata: ["config": "\(file.path)"])
        try await ListenCheck.ensureAvailable(file)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        // One clock for the hub, its transports and the store: every date they write comes from it.
        let clock = SystemClock()
        let store: any Store
        let cursorKey: [UInt8]
        // A PostgreSQL store is a service (its pool and wake-up relay), first in the group so
        // that it stops last, after the hub has recorded its in-flight sends.
        var storeServices: [any Service] = []
        switch file.store {
        case .sqlite(let path):
            store = try SQLiteStore(path: path)
            cursorKey = try file.server.cursorSecret?.revealBytes() ?? KeyFile.load(beside: path)
            logger.info("store: sqlite", metadata: ["path": "\(path)"])
        case .postgres(let url, let poolSize):
            var storeLogger = logger
            storeLogger[metadataKey: "store"] = "postgres"
            var postgresConfiguration = try PostgresStore.Configuration(url: url, poolSize: poolSize)
            postgresConfiguration.clock = clock
            let postgres = PostgresStore(configuration: postgresConfiguration, logger: storeLogger)
            // The shared cursor key lives in the schema: migrate first (the call below is then a no-op).
            try await postgres.migrate()
            // Every instance must sign cursors with the same key: without a configured one, the
            // database keeps a shared random key.
            if let secret = file.server.cursorSecret {
                cursorKey = secret.revealBytes()
            } else {
                cursorKey = try await postgres.sharedKey(named: "cursor")
            }
            store = postgres
            storeServices = [postgres]
            // Never the URL: it holds the password.
            logger.info("store: postgres", metadata: ["poolSize": "\(poolSize)", "url": "\(url.source)"])
        }
        try await store.migrate()

        let signals = FeedSignals(clock: clock)
        (store as? PostgresStore)?.relay(into: signals)  // wake-ups cross instances
        let plugins = HubCLI.plugins
        let transports = try Transports.make(
            for: file, plugins: plugins, signals: signals, clock: clock, logger: logger)
        TransportReport.report(apps: file.apps, plugins: plugins, enabled: transports.map(\.id), logger: logger)

        var hubConfiguration = file.hubConfiguration()
        hubConfiguration.dispatcher.enabled = !noDispatch
        hubConfiguration.instanceID =
            file.server.instanceID
            ?? (file.server.port == 0
                ? "\(ProcessInfo.processInfo.hostName)-pid\(ProcessInfo.processInfo.processIdentifier)"
                : "\(ProcessInfo.processInfo.hostName):\(file.server.port)")
        let hub = try Hub(
            configuration: hubConfiguration, store: store, transports: transports, signals: signals, logger: logger,
            clock: clock)
        let identity = IdentityVerifier(apps: file.apps)
        try await identity.loadKeys()
        var server = HubServerConfiguration(
            host: file.server.host, port: file.server.port, adminToken: file.server.adminToken,
            maxBodyBytes: file.server.maxBodyBytes, cursorKey: cursorKey)
        server.maxBatchBodyBytes = file.server.maxBatchBodyBytes
        server.connections = ConnectionLimits(file.server.connections)
        server.trustedProxies = file.server.trustedProxies
        server.rateLimits = RateLimits(file.rateLimits)
        server.appRateLimits = file.appRateLimits.mapValues { RateLimits($0.over(file.rateLimits)) }
        // The console's configuration page checks hub.yaml again when it is opened.
        let configPath = file.path
        server.configReport = { await ConfigCheckReport.make(path: configPath, plugins: plugins) }
        let host = file.server.host
        let application = buildApplication(
            hub: hub, configuration: server, identity: identity,
            metrics: file.server.metricsListen == nil ? registry : nil, logger: logger,
            onListening: { port in logger.notice("hub listening on http://\(host):\(port)") })
        // Shut down in reverse order: the API, then the hub (draining its sends), then the
        // transports (closing their connections), then the store.
        var services: [any Service] = storeServices + transports + [hub, application]
        if let metrics = file.server.metricsListen {
            // /metrics on a port of its own (server.metricsListen); the API port answers 404 there.
            services.append(
                buildMetricsApplication(
                    hub: hub, metrics: registry, host: metrics.host, port: metrics.port, logger: logger,
                    onListening: { port in logger.notice("metrics listening on http://\(metrics.host):\(port)/metrics")
                    }
                ))
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        logger.info(
            "hub starting", metadata: ["apps": "\(file.apps.count)", "instance": "\(hubConfiguration.instanceID)"])
        try await group.run()
        logger.info("hub stopped")
    }
}

/// A random key kept in a file with mode 0600 (its folder 0700 when created), made on first use.
enum KeyFile {
    static func load(beside databasePath: String) throws -> [UInt8] {
        let path = databasePath + ".cursor-key"
        if let data = FileManager.default.contents(atPath: path), data.count >= SecretStrength.minimumKeyBytes {
            return Array(data)
        }
        let key = (0..<SecretStrength.minimumKeyBytes).map { _ in UInt8.random(in: 0...255) }
        try OwnerOnlyFiles.createDirectories(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        // A short key file is no key: replace it.
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        guard try OwnerOnlyFiles.createFile(path, contents: key) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return key
    }
}

extension ConnectionLimits {
    /// hub.yaml's `server.connections`.
    init(_ settings: ConnectionSettings) {
        self.init(
            headerTimeout: settings.headerTimeout, bodyTimeout: settings.bodyTimeout,
            idleTimeout: settings.idleTimeout, maxConnections: settings.max,
            maxConnectionsPerClient: settings.maxPerClient, maxActiveRequests: settings.maxActiveRequests)
    }
}

extension RateLimits {
    /// hub.yaml's `rateLimits` (or an app's, merged over them); what is not given keeps its default.
    init(_ settings: RateLimitSettings) {
        self.init()
        func apply(_ setting: RateSetting, to field: WritableKeyPath<RateLimits, RateLimit?>) {
            switch setting {
            case .inherit: break
            case .off: self[keyPath: field] = nil
            case .limit(let count, let period): self[keyPath: field] = RateLimit(count, per: period)
            }
        }
        apply(settings.publisherKey, to: \.publisherKey)
        apply(settings.userPublishes, to: \.userPublishes)
        apply(settings.deviceToken, to: \.deviceToken)
        apply(settings.clientIP, to: \.clientIP)
    }
}
