import Foundation
import HubCore
import HubTesting
import PostgresNIO
import Synchronization
import Testing

@testable import HubPostgres

// Publishes of several users in one transaction (`PostgresStore+Publish.swift`). Each test makes
// the batch it checks: a store with a pool of 4 runs one batch at a time, a first publish is held
// inside its transaction by another session holding its feed's lock, the publishes under test
// queue behind it, and they run together once the lock is released.
@Suite("PostgreSQL publishes in batches", .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PublishBatchTests {
    static let app = "notes.contoso.com"
    static let t0 = Date(timeIntervalSince1970: 1_750_000_000)

    @Test("Queued publishes of many users run as one batch; each gets its own notification, version and hand-off")
    func batchOfUsers() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            #expect(store.publishes.runners == 1)
            let users = (0..<30).map { String(format: "user-%02d", $0) }
            for user in users { _ = try await store.upsertEndpoint(Self.endpoint("e1", user: user)) }
            let handOff = HandOff(owner: "worker-a", leaseUntil: Self.t0 + 60, transports: [.apns])

            // 1. New notifications, handed off: one leased tap each, for its own notification.
            let first = try await Self.heldBatch(store, users.map { Self.request($0, "n1", handOff: handOff) })
            #expect(store.publishes.statistics.largestBatch == users.count)
            var versions: Set<Int64> = []
            for (user, result) in zip(users, first) {
                let result = try result.get()
                #expect(result.created)
                #expect(result.notification.id == "\(user)-n1")
                #expect(result.notification.userId == user)
                versions.insert(result.notification.changeVersion)
                #expect(result.handedOff.count == 1)
                let tap = try #require(result.handedOff.first)
                #expect(tap.delivery.userId == user && tap.endpoint.userId == user && tap.endpoint.id == "e1")
                #expect(tap.delivery.notificationId == result.notification.id)
                #expect(tap.delivery.changeVersion == result.notification.changeVersion)
                #expect(tap.notification == result.notification)
                #expect(tap.delivery.attempts == 1)
                #expect(result.leftForClaim == 0)
            }
            #expect(versions.count == users.count, "every publish took a version of its own")

            // 2. The same notifications again, not handed off: updated, and a new tap waits
            //    (the first ones are leased, so nothing merges).
            let second = try await Self.heldBatch(store, users.map { Self.request($0, "n1", at: 1) })
            for (user, result) in zip(users, second) {
                let result = try result.get()
                #expect(!result.created)
                #expect(result.notification.id == "\(user)-n1")
                #expect(result.handedOff.isEmpty)
                #expect(result.leftForClaim == 1)
            }
            let waiting = try await Self.waitingTaps(store)
            #expect(waiting.keys.sorted() == users)

            // 3. New notifications handed off: each tap merges into its user's waiting tap and is
            //    handed off as that row, announcing the new notification.
            let third = try await Self.heldBatch(store, users.map { Self.request($0, "n2", at: 2, handOff: handOff) })
            for (user, result) in zip(users, third) {
                let result = try result.get()
                #expect(result.created)
                let tap = try #require(result.handedOff.first)
                #expect(result.handedOff.count == 1)
                #expect(tap.delivery.id == waiting[user], "merged into \(user)'s waiting tap")
                #expect(tap.delivery.notificationId == "\(user)-n2")
                #expect(tap.delivery.changeVersion == result.notification.changeVersion)
                #expect(tap.delivery.attempts == 1)
                #expect(result.leftForClaim == 0)
            }
            #expect(try await Self.waitingTaps(store).isEmpty)
            #expect(store.publishes.statistics.largestBatch == users.count)
        }
    }

    @Test("A publish the database refuses fails alone; the others of its batch are stored")
    func refusedPublishFailsAlone() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let users = (0..<12).map { "user-\($0)" }
            var requests = users.map { Self.request($0, "n1") }
            // jsonb cannot hold U+0000: the server refuses this payload.
            requests[5].draft.payload = NotificationPayload(rawContent: "a\u{0}b")
            let results = try await Self.heldBatch(store, requests)
            #expect(store.publishes.statistics.largestBatch == users.count)
            for (index, result) in results.enumerated() {
                if index == 5 {
                    #expect(throws: PostgresStoreError.self) { try result.get() }
                } else {
                    #expect(try result.get().notification.id == "\(users[index])-n1")
                }
            }
            for (index, user) in users.enumerated() {
                let page = try await store.feed(FeedKey(appId: Self.app, userId: user), after: 0, limit: 10)
                #expect(page.changes.count == (index == 5 ? 0 : 1), "\(user)'s feed")
            }
        }
    }

    @Test("Publishes to one feed never share a batch; they run in the order they came, each with a newer version")
    func oneFeedInTurn() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            let requests =
                (0..<4).map { Self.request("alice", "n\($0)") } + (0..<4).map { Self.request("bob-\($0)", "n") }
            let results = try await Self.heldBatch(store, requests)
            let statistics = store.publishes.statistics
            // The held publish; then alice's first with the four others; then alice's others alone.
            #expect(statistics.batches == 5)
            #expect(statistics.largestBatch == 5)
            let alice = try results.prefix(4).map { try $0.get().notification.changeVersion }
            #expect(alice == alice.sorted() && Set(alice).count == 4)
            let page = try await store.feed(FeedKey(appId: Self.app, userId: "alice"), after: 0, limit: 10)
            #expect(page.changes.count == 4)
        }
    }

    @Test("A publish that waited for its feed's lock reads what the lock's holder committed meanwhile")
    func readsAfterTheLock() async throws {
        try await PostgresTestDatabase.withStore { store in
            try await store.migrate()
            _ = try await store.publish(Self.request("alice", "n1"))
            // Advisory locks are the database's, not the schema's: a user no parallel test has.
            let user = "bob-\(UInt32.random(in: 0 ... .max))"
            let key = FeedKey(appId: Self.app, userId: user)
            let locked = Latch()
            let release = Latch()
            // Another transaction holds the feed and stores the user's notification "n1" in it.
            let holder = Task {
                try await store.transaction { db in
                    try await PostgresStore.lockFeed(key, on: db)
                    try await db.rows(
                        """
                        INSERT INTO hub_notification
                        SELECT (jsonb_populate_record(n, jsonb_build_object('user_id', \(user)::text, 'id',
                            \(user + "-n1")::text))).*
                        FROM hub_notification n WHERE n.user_id = 'alice'
                        """)
                    locked.open()
                    try await release.wait()
                }
            }
            try await locked.wait()
            let publish = Task { try await store.publish(Self.request(user, "n1", at: 1)) }
            // The publish's statement waits for the lock: a snapshot taken when it started would
            // not hold the commit below.
            #expect(await eventually { (try? await Self.waitingForFeedLock(store, key)) == true })
            release.open()
            try await holder.value
            let result = try await publish.value
            #expect(!result.created, "the publish read the notification committed while it waited")
            #expect(result.notification.id == user + "-n1")
            #expect(result.notification.changeVersion > 0)
        }
    }

    // MARK: - Helpers

    /// Whether a session waits for the lock of the feed `key`.
    static func waitingForFeedLock(_ store: PostgresStore, _ key: FeedKey) async throws -> Bool {
        let waiting = try await store.rows(
            """
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND classid = \(Int64(PostgresStore.feedLockSpace))::oid
                AND objid = (hashtext(\(key.appId) || E'\\n' || \(key.userId))::bigint & 4294967295)::oid
            """
        ).first?.decode(Int.self)
        return waiting == 1
    }

    static func endpoint(_ id: String, user: String) -> Endpoint {
        Endpoint(
            id: id, appId: app, userId: user, platform: .ios, platformAppId: "com.contoso.notes", transport: .apns,
            token: "token-\(user)-\(id)", attributes: ["environment": "production"], appDisplayName: "Notes",
            registeredAt: t0)
    }

    static func request(
        _ user: String, _ appNotificationId: String, at seconds: Int = 0, handOff: HandOff? = nil
    )
        -> PublishRequest
    {
        let now = t0 + TimeInterval(seconds)
        return PublishRequest(
            key: FeedKey(appId: app, userId: user),
            draft: NotificationDraft(
                appNotificationId: appNotificationId, payload: NotificationPayload(rawContent: "{\"n\":1}")),
            newId: "\(user)-\(appNotificationId)", expirationDateTime: now + 86_400, deliveryMode: .shoulderTap,
            now: now, handOff: handOff)
    }

    /// Runs `requests` after a held publish (to its own user), so that they queue together; returns
    /// their results in order.
    static func heldBatch(
        _ store: PostgresStore, _ requests: [PublishRequest]
    ) async throws
        -> [Result<PublishResult, any Error>]
    {
        let holder = FeedKey(appId: app, userId: "holder-\(UInt32.random(in: 0 ... .max))")
        let locked = Latch()
        let release = Latch()
        let before = store.publishes.statistics.batches
        let lock = Task {
            try await store.transaction { db in
                try await PostgresStore.lockFeed(holder, on: db)
                locked.open()
                try await release.wait()
            }
        }
        try await locked.wait()
        var held = request(holder.userId, "held")
        held.key = holder
        let heldPublish = Task { [held] in try await store.publish(held) }
        #expect(await eventually { store.publishes.statistics.batches == before + 1 }, "the held publish runs")
        return try await withThrowingTaskGroup(of: (Int, Result<PublishResult, any Error>).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask {
                    do { return (index, .success(try await store.publish(request))) } catch {
                        return (index, .failure(error))
                    }
                }
                // Queued in this order.
                #expect(await eventually { store.publishes.queued == index + 1 })
            }
            release.open()
            try await lock.value
            _ = try await heldPublish.value
            var results = [Result<PublishResult, any Error>?](repeating: nil, count: requests.count)
            for try await (index, result) in group { results[index] = result }
            return results.map { $0! }
        }
    }

    /// The pending, unleased taps by user: their IDs.
    static func waitingTaps(_ store: PostgresStore) async throws -> [String: Int64] {
        var taps: [String: Int64] = [:]
        for row in try await store.rows(
            "SELECT user_id, id FROM hub_delivery WHERE state = 'pending' AND lease_owner IS NULL")
        {
            let (user, id) = try row.decode((String, Int64).self)
            taps[user] = id
        }
        return taps
    }
}
