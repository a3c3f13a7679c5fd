import Foundation
import HubPolling
import HubSQLite
import HubTesting
import Logging
import Synchronization
import Testing

@testable import HubCore

extension ManualClock {
    /// A manual clock that starts at a fixed date (2027-01-15T08:00:00Z).
    static func fixed() -> ManualClock { ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000)) }
}

/// One app with iOS and Android IDs, an in-memory SQLite store, recording APNs/FCM transports and polling.
struct TestHub {
    static let app = CrossDeviceApp(
        id: "notes.contoso.com", name: "Notes",
        platforms: [
            .ios: ["com.contoso.notes"], .android: ["com.contoso.notes"], .windows: ["Contoso.Notes_8wekyb3d8bbwe"],
        ])

    let hub: Hub
    let apns: RecordingTransport
    let fcm: RecordingTransport
    let store: SQLiteStore
    let clock: ManualClock?

    init(
        apns: RecordingTransport = TestHub.apnsLike(),
        fcm: RecordingTransport = RecordingTransport(id: .fcm, platforms: [.android]),
        clock: ManualClock? = nil,
        dispatcher: DispatcherConfiguration = TestHub.fastDispatcher,
        storePath: String? = nil,
        plug: StorePlug? = nil,
        storeTimeout: Duration = .seconds(30),
        instanceID: String = "hub-test",
        logger: Logger = Logger(label: "hub")
    ) throws {
        let store = try storePath.map(SQLiteStore.init(path:)) ?? SQLiteStore.inMemory()
        let hubClock: any HubClock = clock ?? SystemClock()
        let signals = FeedSignals(clock: hubClock)
        var configuration = HubConfiguration(apps: [Self.app], instanceID: instanceID, storeTimeout: storeTimeout)
        configuration.dispatcher = dispatcher
        self.hub = try Hub(
            configuration: configuration, store: plug.map { InterceptedStore(store, $0) } ?? store,
            transports: [apns, fcm, PollingTransport(signals: signals)], signals: signals, logger: logger,
            clock: hubClock)
        self.apns = apns
        self.fcm = fcm
        self.store = store
        self.clock = clock
    }

    /// A recording transport that serves iOS and takes the `environment` attribute, as APNs does.
    static func apnsLike(
        script: @escaping @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in .accepted }
    ) -> RecordingTransport {
        RecordingTransport(id: .apns, platforms: [.ios], endpointAttributes: ["environment"], script: script)
    }

    static var fastDispatcher: DispatcherConfiguration {
        var configuration = DispatcherConfiguration()
        configuration.initialBackoff = .milliseconds(10)
        configuration.maxBackoff = .milliseconds(50)
        configuration.idleInterval = .milliseconds(20)
        configuration.maxAttempts = 3
        return configuration
    }

    /// Runs the hub's dispatcher and sweeper around `body`.
    func running(_ body: () async throws -> Void) async throws {
        try await hub.store.migrate()
        let task = Task { try await hub.run() }
        defer { task.cancel() }
        try await body()
    }

    @discardableResult
    func register(
        _ id: String, user: String = "alice", platform: Platform, transport: TransportID, token: String? = nil
    )
        async throws -> Endpoint
    {
        try await hub.registerEndpoint(
            app: Self.app.id, user: user, id: id,
            EndpointRegistration(
                platform: platform, appId: Self.app.platforms[platform]![0], transport: transport, token: token))
    }

    @discardableResult
    func publish(
        _ id: String, user: String = "alice", priority: NotificationPriority = .none
    ) async throws
        -> UserNotification
    {
        try await hub.publish(
            app: Self.app.id, user: user,
            NotificationDraft(
                appNotificationId: id, priority: priority,
                payload: NotificationPayload(rawContent: "{\"n\":\"\(id)\"}", visualContent: VisualContent(title: id)))
        ).notification
    }
}
