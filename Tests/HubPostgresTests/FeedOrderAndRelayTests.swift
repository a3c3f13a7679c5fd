import Foundation
import HubCore
import HubPolling
import HubTesting
import Synchronization
import Testing

@testable import HubPostgres

@Suite(
    "Feed order and the wake-up relay", .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct FeedOrderAndRelayTests {
    static let key = FeedKey(appId: "notes.contoso.com", userId: "alice")

    /// The hazard of a bare sequence: a version taken earlier committing later, after a reader
    /// already moved its cursor past it. A reader that follows the cursor while two stores
    /// publish into one feed concurrently must see every change.
    @Test("A reader following the cursor never skips a change published concurrently by two stores")
    func readerNeverSkips() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores(poolSize: 8)
        let publishers = 8
        let perPublisher = 25
        try await PostgresTestDatabase.running([first, second]) {
            try await first.migrate()
            let done = Mutex(false)
            async let seen: [UserNotification] = {
                var cursor: Int64 = 0
                var seen: [UserNotification] = []
                while true {
                    let finished = done.withLock { $0 }
                    let page = try await first.feed(Self.key, after: cursor, limit: 1000)
                    seen += page.changes
                    cursor = page.version
                    if finished && page.changes.isEmpty { return seen }
                }
            }()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for publisher in 0..<publishers {
                    let store = publisher.isMultiple(of: 2) ? first : second
                    group.addTask {
                        for index in 0..<perPublisher {
                            _ = try await store.publish(Self.request("p\(publisher)-\(index)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
            done.withLock { $0 = true }
            let changes = try await seen
            #expect(changes.count == publishers * perPublisher, "changes skipped by the reader")
            #expect(Set(changes.map(\.appNotificationId)).count == publishers * perPublisher)
            let versions = changes.map(\.changeVersion)
            #expect(versions == versions.sorted() && Set(versions).count == versions.count)
        }
    }

    @Test("Wake-ups reach the other store's signals, but a store ignores its own")
    func relayDeliversToOthersOnly() async throws {
        try await Self.withRelayingStores { first, firstSignals, second, secondSignals in
            #expect(await eventually { (try? await first.wakeConnectionCount()) == 1 })
            #expect(await eventually { (try? await second.wakeConnectionCount()) == 1 })
            // Each has heard the other announce itself: wake-ups are sent only to a listener.
            #expect(await eventually { first.relayPeerCount == 1 && second.relayPeerCount == 1 })
            let ticket = secondSignals.ticket()
            let ownTicket = firstSignals.ticket()
            firstSignals.wake(Self.key, endpoint: "p1")
            #expect(await secondSignals.wait(Self.key, endpoint: "p1", after: ticket, timeout: .seconds(5)))
            // The local wake-up counts once; the echo of its own NOTIFY adds nothing. The second
            // store's answer is sent after the first's NOTIFY reached it, so PostgreSQL delivers it
            // after that echo: once it has arrived, the echo has been received (and skipped).
            let answerTicket = firstSignals.ticket()
            secondSignals.wake(Self.key, endpoint: "p2")
            #expect(await firstSignals.wait(Self.key, endpoint: "p2", after: answerTicket, timeout: .seconds(5)))
            #expect(firstSignals.ticket() == ownTicket + 2, "its own wake-up and the answer, not the echo")
        }
    }

    @Test("The listener reconnects after the server drops its connection")
    func relayReconnects() async throws {
        try await Self.withRelayingStores { _, firstSignals, second, secondSignals in
            #expect(await eventually { (try? await second.wakeConnectionCount()) == 1 })
            // What it knew of a feed's newest version is stale once wake-ups may have been missed.
            secondSignals.committed(Self.key, version: 42)
            #expect(secondSignals.isCurrent(Self.key, version: 42))
            let terminated = try await second.terminateWakeConnection()
            #expect(terminated == 1)
            #expect(await eventually { !secondSignals.isCurrent(Self.key, version: 42) }, "forgotten on the loss")
            #expect(await eventually { (try? await second.wakeConnectionCount()) == 1 }, "listening again")
            // LISTEN runs right after connecting: wake until one arrives.
            #expect(
                await eventually {
                    let ticket = secondSignals.ticket()
                    firstSignals.wake(Self.key)
                    return await secondSignals.wait(Self.key, endpoint: nil, after: ticket, timeout: .milliseconds(500))
                }, "wake-ups arrive again")
        }
    }

    @Test("The relay's heartbeat runs on the store's clock: a query on the wake-up connection once it passes 15 s")
    func heartbeatOnTheClock() async throws {
        let clock = ManualClock()
        let store = try PostgresTestDatabase.makeStore(schema: PostgresTestDatabase.freshSchema(), clock: clock)
        store.relay(into: FeedSignals(clock: clock))
        try await PostgresTestDatabase.running([store]) {
            #expect(await eventually { (try? await store.wakeConnectionCount()) == 1 })
            // Asleep on the clock: the heartbeat and the statistics checks.
            #expect(await eventually { clock.sleeperCount == 2 })
            let before = try await Self.wakeConnectionQuery(store)
            #expect(before != PostgresStore.wakeConnectionsSQL, "no heartbeat before the clock moves")
            clock.advance(by: PostgresStore.heartbeatInterval)
            // Well within the interval of real time: a heartbeat on the system's clock would not come.
            #expect(
                await eventually(timeout: .seconds(5)) {
                    (try? await Self.wakeConnectionQuery(store)) == PostgresStore.wakeConnectionsSQL
                },
                "the heartbeat's query")
        }
    }

    @Test("Alone on its channel a store sends no NOTIFY for its wake-ups; once another listens, they reach it")
    func noNotifyWhileAlone() async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        let firstSignals = FeedSignals()
        let secondSignals = FeedSignals()
        first.relay(into: firstSignals)
        try await PostgresTestDatabase.running([first]) {
            #expect(await eventually { (try? await first.wakeConnectionCount()) == 1 })
            #expect(await eventually { first.relayCounts.notifies == 1 }, "its announcement")
            for index in 0..<10 { firstSignals.wake(FeedKey(appId: Self.key.appId, userId: "user\(index)")) }
            #expect(await eventually { first.relayCounts.unsent == 10 }, "dropped by the sender, nobody listens")
            #expect(first.relayCounts.notifies == 1, "no NOTIFY for the wake-ups")
            // A second store begins to listen: it announces itself, the first answers.
            second.relay(into: secondSignals)
            let runner = Task { await second.run() }
            defer { runner.cancel() }
            #expect(await eventually { first.relayPeerCount == 1 && second.relayPeerCount == 1 })
            let ticket = secondSignals.ticket()
            firstSignals.wake(Self.key)
            #expect(await secondSignals.wait(Self.key, endpoint: nil, after: ticket, timeout: .seconds(5)))
            #expect(first.relayCounts.unsent == 10, "sent now that someone listens")
        }
    }

    /// The last statement of `store`'s wake-up connection, as the server saw it.
    static func wakeConnectionQuery(_ store: PostgresStore) async throws -> String? {
        try await store.rows(
            "SELECT query FROM pg_stat_activity WHERE application_name LIKE \("%wake-ups \(store.instanceID)%")"
        ).first?.decode(String.self)
    }

    /// Runs two stores on one fresh schema around `body`, each relaying wake-ups into its own signals.
    static func withRelayingStores(
        _ body: (PostgresStore, FeedSignals, PostgresStore, FeedSignals) async throws -> Void
    ) async throws {
        let (first, second) = try PostgresTestDatabase.twoStores()
        let firstSignals = FeedSignals()
        let secondSignals = FeedSignals()
        first.relay(into: firstSignals)
        second.relay(into: secondSignals)
        try await PostgresTestDatabase.running([first, second]) {
            try await body(first, firstSignals, second, secondSignals)
        }
    }

    static func request(_ id: String) -> PublishRequest {
        let now = Date()
        return PublishRequest(
            key: key, draft: NotificationDraft(appNotificationId: id, payload: NotificationPayload(rawContent: id)),
            newId: UUID().uuidString.lowercased(), expirationDateTime: now.addingTimeInterval(3600),
            deliveryMode: .shoulderTap, now: now)
    }
}

@Suite("PostgresStore without a server")
struct PostgresStoreOfflineTests {
    @Test("A database URL is parsed, and its password never shows")
    func parsesURL() throws {
        let url = Secret("postgresql://hub%40ops:p%40ss%2Fw0rd@db.example.com:6543/hub%20prod?sslmode=require")
        let configuration = try PostgresStore.Configuration(url: url, poolSize: 7, schema: "tenant_1")
        #expect(configuration.host == "db.example.com")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "hub@ops")
        #expect(configuration.password?.reveal() == "p@ss/w0rd")
        #expect(configuration.database == "hub prod")
        #expect(configuration.tls == .require)
        #expect(configuration.poolSize == 7)
        #expect(!configuration.description.contains("p@ss") && !configuration.description.contains("p%40ss"))
        let local = try PostgresStore.Configuration(url: Secret("postgres://hub@127.0.0.1/hub?sslmode=disable"))
        #expect(local.port == 5432 && local.password == nil && local.tls == .disable)
    }

    @Test("A bad URL or schema is refused without repeating the URL")
    func refusesBadConfiguration() {
        for text in ["mysql://u:secret@h/db", "postgres://u:secret@/db", "postgres://u:secret@h/db?sslcert=x"] {
            let error = #expect(throws: PostgresStoreError.self) {
                try PostgresStore.Configuration(url: Secret(text))
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error.map { !"\($0)".contains("secret") } ?? false)
        }
        #expect(throws: PostgresStoreError.self) {
            try PostgresStore.Configuration(url: Secret("postgres://u@h/db"), schema: "Robert'); DROP")
        }
    }

    @Test("A call fails as unavailable within the lease timeout when the store is not running or no server answers")
    func neverWaitsForever() async throws {
        // Nothing listens on port 1; the store is not running at first.
        var configuration = try PostgresStore.Configuration(
            url: Secret("postgres://hub:secret@127.0.0.1:1/hub?sslmode=disable"), poolSize: 2)
        configuration.leaseTimeout = .milliseconds(300)
        let store = PostgresStore(configuration: configuration)
        for running in [false, true] {
            let runner = running ? Task { await store.run() } : nil
            let start = ContinuousClock.now
            let error = await #expect(throws: HubError.self) { try await store.nextDueDate() }
            let elapsed = ContinuousClock.now - start
            #expect(error?.code == .unavailable)
            #expect(elapsed < .seconds(3), "a call waited \(elapsed) (running: \(running))")
            #expect(!"\(error.map { "\($0)" } ?? "")".contains("secret"))
            runner?.cancel()
            _ = await runner?.value
        }
    }

    @Test("Wake-ups are split into NOTIFY payloads under 8000 bytes")
    func payloadsFit() throws {
        let wakes = (0..<2000).map { Wake(app: "notes.contoso.com", user: "user-\($0)", endpoint: "e\($0 % 3)") }
        let payloads = PostgresStore.payloads(for: wakes, from: "i1", logger: .init(label: "test"))
        #expect(payloads.count > 1)
        #expect(payloads.allSatisfy { $0.utf8.count <= PostgresStore.payloadLimit })
        let decoded = try payloads.flatMap { try JSONDecoder().decode(WakeMessage.self, from: Data($0.utf8)).wakes }
        #expect(decoded == wakes)
    }

    @Test("Every audience of a wake-up survives the trip through a NOTIFY payload")
    func audiencesRoundTrip() throws {
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let audiences: [FeedSignals.Audience] = [
            .feed, .endpoint("phone"), .everyone(except: nil), .everyone(except: "tablet"),
        ]
        let wakes = audiences.map { Wake(key, $0) }
        let payloads = PostgresStore.payloads(for: wakes, from: "i1", logger: .init(label: "test"))
        let decoded = try payloads.flatMap { try JSONDecoder().decode(WakeMessage.self, from: Data($0.utf8)).wakes }
        #expect(decoded.map(\.audience) == audiences)
        #expect(decoded.allSatisfy { $0.key == key })
        // An older instance's wake-up (no "all" key) still decodes, as the feed's anonymous waiters'.
        let old = try JSONDecoder().decode(
            WakeMessage.self, from: Data(#"{"from":"i0","wakes":[{"a":"x","u":"y"}]}"#.utf8))
        #expect(old.wakes.map(\.audience) == [.feed])
    }
}
