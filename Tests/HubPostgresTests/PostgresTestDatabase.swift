import Foundation
import HubCore
import HubPolling
import HubTesting
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HubPostgres

/// The PostgreSQL server the tests use: the one `scripts/with-postgres` started (it exports
/// `HUB_TEST_DATABASE_URL`). Each test works in a schema of its own, created by `migrate()` and
/// dropped when the test ends, so tests run in parallel on one database.
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["HUB_TEST_DATABASE_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Tests that need the server run when it is configured, and always in CI, where a missing
    /// server must fail them rather than skip them.
    static let isEnabled = url != nil || isCI

    /// Why the tests did not run, shown by `swift test` as the skip reason.
    static let skipReason: Comment =
        "HUB_TEST_DATABASE_URL is not set: run scripts/test, or scripts/with-postgres swift test"

    /// The conformance checks' store: partitions of finished deliveries a second long (their
    /// times are whole seconds, so dropping whole partitions retires exactly what the checks
    /// expect), two of them ahead (a check's times jump; the rest waits in the default partition).
    static func secondPartitions(_ configuration: inout PostgresStore.Configuration) {
        configuration.retentionPartition = .seconds(1)
        configuration.retentionPartitionsAhead = 2
    }

    /// A new schema name, unique to one test.
    static func freshSchema() -> String { "t_" + String(UInt64.random(in: 1 ... .max), radix: 16) }

    /// A store on `schema`, not running yet.
    /// - Parameters:
    ///   - server: the shared server, or the one tests may stop and start.
    ///   - clock: the store's clock (the hub's, in a test that drives one).
    static func makeStore(
        schema: String, poolSize: Int = 4, server: TestServer = .shared, logLevel: Logger.Level = .warning,
        clock: any HubClock = SystemClock(), configure: (inout PostgresStore.Configuration) -> Void = { _ in }
    ) throws -> PostgresStore {
        guard let url = server.url else {
            Issue.record("\(server.variable) is not set although CI=true: .ci/run must start PostgreSQL")
            throw PostgresStoreError.invalidConfiguration("\(server.variable) is not set")
        }
        var logger = Logger(label: "hub.postgres.tests")
        logger.logLevel = logLevel
        var configuration = try PostgresStore.Configuration(
            url: Secret(url, source: "env:\(server.variable)"), poolSize: poolSize, schema: schema)
        configuration.clock = clock
        // Tests make a schema each: 8 partitions of a day ahead (not 40) cover the default
        // lifetime (7 days) with far less DDL per test.
        configuration.retentionPartitionsAhead = 8
        configure(&configuration)
        return PostgresStore(configuration: configuration, logger: logger)
    }

    /// Two stores on one fresh schema, as two hub instances sharing a database; not running yet.
    static func twoStores(poolSize: Int = 4) throws -> (PostgresStore, PostgresStore) {
        let schema = freshSchema()
        return (try makeStore(schema: schema, poolSize: poolSize), try makeStore(schema: schema, poolSize: poolSize))
    }

    /// Runs `stores` (their pools and relays) around `body`, then stops them and drops their
    /// schemas, also when `body` throws.
    static func running<Result: Sendable>(
        _ stores: [PostgresStore], _ body: () async throws -> Result
    ) async throws -> Result {
        let outcome: Swift.Result<Result, any Error>
        do {
            outcome = .success(
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for store in stores { group.addTask { await store.run() } }
                    defer { group.cancelAll() }
                    return try await body()
                })
        } catch {
            outcome = .failure(error)
        }
        for schema in Set(stores.compactMap(\.configuration.schema)) {
            try? await stores.first { $0.configuration.schema == schema }?.dropSchema()
        }
        return try outcome.get()
    }

    /// A running store on a fresh schema (not migrated: the conformance checks migrate).
    static func withStore<Result: Sendable>(
        clock: any HubClock = SystemClock(), configure: (inout PostgresStore.Configuration) -> Void = { _ in },
        _ body: (PostgresStore) async throws -> Result
    ) async throws -> Result {
        let store = try makeStore(schema: freshSchema(), clock: clock, configure: configure)
        return try await running([store]) { try await body(store) }
    }
}

/// A PostgreSQL server the tests use.
enum TestServer: Sendable {
    /// The server every test shares (`HUB_TEST_DATABASE_URL`).
    case shared
    /// The server that outage tests stop and start (`HUB_TEST_RESTART_DATABASE_URL`); no other
    /// test uses it, so the outage never disturbs tests running in parallel.
    case restartable
    /// A primary and standby a test started itself (`FailoverTests`), by their multi-host URL.
    case pair(url: String)

    var variable: String {
        switch self {
        case .shared: "HUB_TEST_DATABASE_URL"
        case .restartable: "HUB_TEST_RESTART_DATABASE_URL"
        case .pair: "FAILOVER_PAIR"
        }
    }

    var url: String? {
        if case .pair(let url) = self { return url }
        return ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// Stops and starts the restartable server with the script `scripts/with-postgres` exports as
/// `HUB_TEST_RESTART_PGCTL`.
enum RestartableServer {
    static let control: String? = ProcessInfo.processInfo.environment["HUB_TEST_RESTART_PGCTL"].flatMap {
        $0.isEmpty ? nil : $0
    }
    /// Runs when the restartable server is there, and always in CI, where it must be.
    static let isEnabled = (control != nil && TestServer.restartable.url != nil) || PostgresTestDatabase.isCI
    static let skipReason: Comment =
        "HUB_TEST_RESTART_PGCTL is not set: run scripts/test, or scripts/with-postgres swift test"

    /// Stops the server in fast mode (clients are disconnected, as in a restart) and waits until it is down.
    static func stop() async throws { try await run("stop") }

    /// Starts the server again (same port and data) and waits until it accepts connections.
    static func start() async throws { try await run("start") }

    private static func run(_ action: String) async throws {
        guard let control else {
            Issue.record("HUB_TEST_RESTART_PGCTL is not set although CI=true")
            throw PostgresStoreError.invalidConfiguration("HUB_TEST_RESTART_PGCTL is not set")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: control)
        process.arguments = [action]
        process.standardOutput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        guard status == 0 else {
            throw PostgresStoreError(.server, "\(control) \(action) exited with \(status)")
        }
    }
}

/// One hub instance of a multi-instance test: its own store, signals, transports and hub.
struct HubInstance: Sendable {
    static let app = CrossDeviceApp(
        id: "notes.contoso.com", name: "Notes",
        platforms: [.ios: ["com.contoso.notes"], .web: ["https://notes.contoso.com"]])

    let name: String
    let store: PostgresStore
    let signals: FeedSignals
    let apns: RecordingTransport
    let hub: Hub

    /// - Parameters:
    ///   - dispatcher: how this instance works the outbox (lease, idle interval, …).
    ///   - apns: what sending to an APNs endpoint does on this instance.
    ///   - plug: what every store call of this instance's hub goes through (a ``StorePlug``, or a
    ///     test's own interceptor).
    ///   - clock: the clock of the hub, its signals and its store.
    ///   - storeTimeout: the hub's deadline for each store call (`nil`: the default).
    init(
        _ name: String, schema: String, dispatcher: DispatcherConfiguration, server: TestServer = .shared,
        apns: @escaping @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in .accepted },
        broadcasts: BroadcastConfiguration = BroadcastConfiguration(), plug: (any StoreInterceptor)? = nil,
        clock: any HubClock = SystemClock(), storeTimeout: Duration? = nil
    ) throws {
        self.name = name
        let store = try PostgresTestDatabase.makeStore(schema: schema, poolSize: 6, server: server, clock: clock)
        self.store = store
        signals = FeedSignals(clock: clock)
        store.relay(into: signals)
        self.apns = RecordingTransport(
            id: .apns, platforms: [.ios], endpointAttributes: ["environment"], script: apns)
        var configuration = HubConfiguration(apps: [Self.app])
        configuration.dispatcher = dispatcher
        configuration.instanceID = name
        configuration.broadcasts = broadcasts
        if let storeTimeout { configuration.storeTimeout = storeTimeout }
        var logger = Logger(label: "hub.\(name)")
        logger.logLevel = .warning
        hub = try Hub(
            configuration: configuration, store: plug.map { Self.intercepted(store, $0) } ?? store,
            transports: [self.apns, PollingTransport(signals: signals)], signals: signals, logger: logger,
            clock: clock)
    }

    /// `store` with its calls going through `interceptor` (the existential opened).
    private static func intercepted<Interceptor: StoreInterceptor>(
        _ store: any Store, _ interceptor: Interceptor
    ) -> any Store {
        InterceptedStore(store, interceptor)
    }

    /// Registers an APNs endpoint (`ios`) or a polling one (`web`) through this instance.
    @discardableResult
    func register(_ id: String, user: String = "alice", polling: Bool = false) async throws -> Endpoint {
        let registration =
            polling
            ? EndpointRegistration(platform: .web, appId: "https://notes.contoso.com", transport: .polling)
            : EndpointRegistration(
                platform: .ios, appId: "com.contoso.notes", transport: .apns, token: "token-\(user)-\(id)",
                attributes: ["environment": "production"])
        return try await hub.registerEndpoint(app: Self.app.id, user: user, id: id, registration)
    }

    /// Publishes `id` to `user`; `visible`: with visual content, sent as a visible notification.
    func publish(_ id: String, user: String = "alice", visible: Bool = false) async throws -> UserNotification {
        let payload = NotificationPayload(
            rawContent: "{\"id\":\"\(id)\"}", visualContent: visible ? VisualContent(title: id, body: "body") : nil)
        return try await hub.publish(
            app: Self.app.id, user: user,
            NotificationDraft(appNotificationId: id, payload: payload, deliveryMode: visible ? .visible : nil)
        )
        .notification
    }

    /// A dispatcher that only looks at the outbox when poked by a local change, or at `idle`.
    static func dispatcher(lease: Duration = .seconds(60), idle: Duration = .seconds(60)) -> DispatcherConfiguration {
        var configuration = DispatcherConfiguration()
        configuration.lease = lease
        configuration.idleInterval = idle
        configuration.initialBackoff = .milliseconds(10)
        configuration.maxBackoff = .milliseconds(50)
        return configuration
    }
}

/// Runs hubs (and other services) in a service group until ``stop(within:)`` shuts them down
/// gracefully, as SIGTERM does: a hub then writes the outcomes of its in-flight sends, which a
/// cancelled one leaves to their leases.
final class HubRunner: Sendable {
    let group: ServiceGroup
    let task: Task<Void, Never>

    init(_ hubs: [any Service]) {
        var logger = Logger(label: "hub.tests.services")
        logger.logLevel = .critical
        let group = ServiceGroup(services: hubs, logger: logger)
        self.group = group
        task = Task { try? await group.run() }
    }

    /// Shuts the hubs down gracefully (SIGTERM) and waits at most `within` for them to stop.
    /// - Returns: whether they stopped in time.
    @discardableResult
    func stop(within limit: Duration = .seconds(30)) async -> Bool {
        await group.triggerGracefulShutdown()
        let task = self.task
        return (try? await withDeadline(limit, "hub shutdown") { await task.value }) != nil
    }
}

extension Swift.Result where Failure == any Error {
    /// The result of `body`, thrown errors included.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
