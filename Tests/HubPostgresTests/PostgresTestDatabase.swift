import Foundation
import HubCore
import HubPolling
import HubTesting
import Logging
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

    /// A new schema name, unique to one test.
    static func freshSchema() -> String { "t_" + String(UInt64.random(in: 1 ... .max), radix: 16) }

    /// A store on `schema`, not running yet.
    static func makeStore(schema: String, poolSize: Int = 4) throws -> PostgresStore {
        guard let url else {
            Issue.record("HUB_TEST_DATABASE_URL is not set although CI=true: .ci/run must start PostgreSQL")
            throw PostgresStoreError.invalidConfiguration("HUB_TEST_DATABASE_URL is not set")
        }
        var logger = Logger(label: "hub.postgres.tests")
        logger.logLevel = .warning
        return PostgresStore(
            configuration: try .init(
                url: Secret(url, source: "env:HUB_TEST_DATABASE_URL"), poolSize: poolSize,
                schema: schema),
            logger: logger)
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
    static func withStore<Result: Sendable>(_ body: (PostgresStore) async throws -> Result) async throws -> Result {
        let store = try makeStore(schema: freshSchema())
        return try await running([store]) { try await body(store) }
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
    init(
        _ name: String, schema: String, dispatcher: DispatcherConfiguration,
        apns: @escaping @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in .accepted }
    ) throws {
        self.name = name
        store = try PostgresTestDatabase.makeStore(schema: schema, poolSize: 6)
        signals = FeedSignals()
        store.relay(into: signals)
        self.apns = RecordingTransport(id: .apns, script: apns)
        var configuration = HubConfiguration(apps: [Self.app])
        configuration.dispatcher = dispatcher
        configuration.instanceID = name
        var logger = Logger(label: "hub.\(name)")
        logger.logLevel = .warning
        hub = try Hub(
            configuration: configuration, store: store,
            transports: [self.apns, PollingTransport(signals: signals)], signals: signals, logger: logger)
    }

    /// Registers an APNs endpoint (`ios`) or a polling one (`web`) through this instance.
    @discardableResult
    func register(_ id: String, user: String = "alice", polling: Bool = false) async throws -> Endpoint {
        let registration =
            polling
            ? EndpointRegistration(platform: .web, appId: "https://notes.contoso.com", transport: .polling)
            : EndpointRegistration(
                platform: .ios, appId: "com.contoso.notes", transport: .apns, token: "token-\(user)-\(id)",
                environment: .production)
        return try await hub.registerEndpoint(app: Self.app.id, user: user, id: id, registration)
    }

    func publish(_ id: String, user: String = "alice") async throws -> UserNotification {
        try await hub.publish(
            app: Self.app.id, user: user,
            NotificationDraft(appNotificationId: id, payload: NotificationPayload(rawContent: "{\"id\":\"\(id)\"}"))
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
