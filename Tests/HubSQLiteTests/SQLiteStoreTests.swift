import Foundation
import GRDB
import HubCore
import HubTesting
import Testing

@testable import HubSQLite

/// Which kind of SQLite store a test runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, file
    var description: String { rawValue }
}

/// A temporary directory removed when the test ends.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("HubSQLiteTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A database path in a subdirectory that does not exist yet (the store creates it).
    var databasePath: String { url.appendingPathComponent("data/hub.sqlite").path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite("SQLiteStore")
struct SQLiteStoreTests {
    @Test("Store conformance", arguments: StoreKind.allCases, StoreConformance.all)
    func conformance(kind: StoreKind, check: StoreConformance.Check) async throws {
        switch kind {
        case .memory:
            try await check.run(try SQLiteStore.inMemory())
        case .file:
            let directory = try TemporaryDirectory()
            let store = try SQLiteStore(path: directory.databasePath)
            try await check.run(store)
            try store.close()
        }
    }

    @Test("The whole conformance suite runs through its runner")
    func conformanceRunner() async throws {
        try await StoreConformance.run { try SQLiteStore.inMemory() }
    }

    @Test("Running the migrations again is a no-op")
    func migrationsTwice() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.databasePath)
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let published = try await store.publish(request(key, "m-1"))
        #expect(
            try await store.appliedMigrations() == [
                "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",
            ])
        try await store.migrate()
        try await store.migrate()
        #expect(
            try await store.appliedMigrations() == [
                "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",
            ])
        #expect(try await store.notification(key, id: "m-1") == published.notification)
        try store.close()

        let reopened = try SQLiteStore(path: directory.databasePath)
        #expect(
            try await reopened.appliedMigrations() == [
                "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",
            ])
        try reopened.close()
    }

    @Test("Migration v11 fills the badge counters from the notifications already stored")
    func badgeBackfill() async throws {
        let directory = try TemporaryDirectory()
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let store = try SQLiteStore(path: directory.databasePath)
        _ = try await store.publish(request(key, "every"))
        var phones = request(key, "phones")
        phones.draft.targetPolicy = TargetPolicy(platformTypes: [.ios, .android])
        _ = try await store.publish(phones)
        _ = try await store.publish(request(key, "read"))
        _ = try await store.updateState(
            StateChange(key: key, id: "read", readState: .read, userActionState: nil, exceptEndpoint: nil, now: Date()))
        _ = try await store.publish(request(FeedKey(appId: "notes.contoso.com", userId: "bob"), "bob"))
        try store.close()
        // As a database written before v11: no counters, v11 not applied.
        let queue = try DatabaseQueue(path: directory.databasePath)
        try await queue.write { db in
            try db.execute(sql: "DROP TABLE badgeCounter; DELETE FROM grdb_migrations WHERE identifier = 'v11'")
        }
        try queue.close()

        let upgraded = try SQLiteStore(path: directory.databasePath)
        #expect(try await upgraded.appliedMigrations().contains("v11"))
        #expect(try await upgraded.badgeCount(key, platform: .ios) == 2)
        #expect(try await upgraded.badgeCount(key, platform: .web) == 1)
        #expect(try await upgraded.badgeCount(FeedKey(appId: "notes.contoso.com", userId: "bob"), platform: .web) == 1)
        try upgraded.close()
    }

    @Test("A file store closed and reopened keeps everything")
    func reopen() async throws {
        let directory = try TemporaryDirectory()
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let endpoint = Endpoint(
            id: "e1", appId: key.appId, userId: key.userId, platform: .ios, platformAppId: "com.contoso.notes",
            transport: .apns, token: "tok", attributes: ["environment": "production"],
            registeredAt: Date(timeIntervalSince1970: 1))

        let store = try SQLiteStore(path: directory.databasePath)
        let stored = try await store.upsertEndpoint(endpoint)
        let published = try await store.publish(request(key, "r-1")).notification
        let feed = try await store.feed(key, after: 0, limit: 10)
        let statistics = try await store.deliveryStatistics()
        try store.close()

        let reopened = try SQLiteStore(path: directory.databasePath)
        #expect(try await reopened.endpoint(key, id: "e1") == stored)
        #expect(try await reopened.notification(key, id: published.id) == published)
        #expect(try await reopened.feed(key, after: 0, limit: 10) == feed)
        #expect(try await reopened.deliveryStatistics() == statistics)
        let next = try await reopened.publish(request(key, "r-2")).notification
        #expect(next.changeVersion > published.changeVersion, "the change counter survives a restart")
        try reopened.close()
    }

    @Test("A file store runs in WAL mode with synchronous FULL, foreign keys, a busy timeout, temp store in memory")
    func pragmas() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.databasePath)
        #expect(try await store.pragma("journal_mode") == "wal")
        #expect(try await store.pragma("synchronous") == "2")  // FULL
        #expect(try await store.pragma("foreign_keys") == "1")
        #expect(try await store.pragma("busy_timeout") != "0")
        // MEMORY: the savepoints of grouped writes never spill their sub-journals to temporary files.
        #expect(try await store.pragma("temp_store") == "2")
        #expect(FileManager.default.fileExists(atPath: directory.databasePath))
        try store.close()
    }

    @Test("A file store checkpoints its log off the commit path, so the log starts over", arguments: [true, false])
    func checkpointer(running: Bool) async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.databasePath, checkpointInterval: .milliseconds(20))
        // The writer's own checkpoint is only a backstop.
        #expect(try await store.pragma("wal_autocheckpoint") == "\(Checkpointer.backstopPages)")
        let checkpointer = try #require(store.checkpointer)
        if !running { checkpointer.close() }  // as if there were none: only the backstop is left
        let key = FeedKey(appId: "notes.contoso.com", userId: "user-0")
        for index in 0..<400 {
            _ = try await store.publish(request(key, "n-\(index)"))
            // A pause after each burst of 50 commits, for the checkpointer (every 20 ms) to take it:
            // real time on purpose. Waiting for a checkpoint count instead raced with a checkpoint
            // taken during the burst (after it an idle checkpointer takes none: seen in CI).
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(60)) }
        }
        let walPath = directory.databasePath + "-wal"
        let walSize = try #require(try FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int)
        let pageSize = try #require(Int(try await store.pragma("page_size") ?? ""))
        if running {
            #expect(checkpointer.checkpoints >= 3)
            // 400 commits write ~2,700 frames; a log that starts over after each checkpoint holds one
            // burst of 50 commits (~350).
            #expect(walSize < 1_000 * pageSize, "log of \(walSize / pageSize) pages")
            #expect(await eventually { !checkpointer.isRunning }, "the thread ends when idle")
        } else {
            #expect(checkpointer.checkpoints == 0)
            #expect(walSize > 2_000 * pageSize, "log of \(walSize / pageSize) pages")
        }
        try store.close()
    }

    @Test("Publishes commit with an fsync; the dispatcher's bookkeeping without one")
    func durabilityPerWrite() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.databasePath)
        let key = FeedKey(appId: "notes.contoso.com", userId: "user-0")
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "e1", appId: key.appId, userId: key.userId, platform: .ios,
                platformAppId: "com.contoso.notes", transport: .apns, token: "tok", registeredAt: Date()))
        // `pragma` reads the writer connection's level, which stays as the last commit set it.
        let published = try await store.publish(request(key, "d-1")).notification
        #expect(try await store.pragma("synchronous") == "2", "a publish commits with one")
        let now = Date()
        let due = try await store.claimDeliveries(
            .all, limit: 10, now: now, owner: "a", leaseUntil: now.addingTimeInterval(30))
        #expect(due.count == 1)
        #expect(try await store.pragma("synchronous") == "1", "a claim commits without an fsync")
        let delivered = OutboxOutcome.Change.finish(.delivered, detail: nil, goneSince: nil)
        try await store.recordOutcomes(due.map { OutboxOutcome(id: $0.delivery.id, delivered, at: now) })
        #expect(try await store.pragma("synchronous") == "1", "outcomes commit without an fsync")
        try await store.touchEndpoint(key, id: "e1", syncedAt: now)
        #expect(try await store.pragma("synchronous") == "1")
        _ = try await store.updateState(
            StateChange(
                key: key, id: published.id, readState: .read, userActionState: nil, exceptEndpoint: nil, now: now))
        #expect(try await store.pragma("synchronous") == "2", "a state change commits with one")
        try store.close()
    }

    @Test("Concurrent publishes get distinct, increasing versions", arguments: StoreKind.allCases)
    func concurrentPublishes(kind: StoreKind) async throws {
        let directory = try TemporaryDirectory()
        let store = try kind == .memory ? SQLiteStore.inMemory() : SQLiteStore(path: directory.databasePath)
        let endpointKey = FeedKey(appId: "notes.contoso.com", userId: "user-0")
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "e1", appId: endpointKey.appId, userId: endpointKey.userId, platform: .ios,
                platformAppId: "com.contoso.notes", transport: .apns, token: "tok", registeredAt: Date()))
        let tasks = 8
        let perTask = 25
        let clock = ContinuousClock()
        let start = clock.now
        let versions = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var versions: [Int64] = []
                    for index in 0..<perTask {
                        let key = FeedKey(appId: "notes.contoso.com", userId: "user-\(index % 3)")
                        let result = try await store.publish(request(key, "t\(task)-n\(index)"))
                        versions.append(result.notification.changeVersion)
                    }
                    #expect(versions == versions.sorted(), "one task's publishes are ordered")
                    return versions
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let elapsed = clock.now - start
        print("\(kind): \(tasks * perTask) concurrent publishes in \(elapsed)")
        #expect(versions.count == tasks * perTask)
        #expect(Set(versions).count == versions.count, "versions are distinct")
        #expect(Set(versions) == Set(1...Int64(tasks * perTask)), "versions have no gaps")

        var all: [UserNotification] = []
        for user in 0..<3 {
            all += try await store.feed(
                FeedKey(appId: "notes.contoso.com", userId: "user-\(user)"), after: 0, limit: 1000
            )
            .changes
        }
        #expect(all.count == tasks * perTask)
        let claimed = try await store.claimDeliveries(
            limit: 100, now: Date().addingTimeInterval(1), owner: "test", leaseUntil: Date().addingTimeInterval(60))
        #expect(claimed.count == 1, "all taps to the one endpoint coalesced")
        #expect(
            claimed.first?.delivery.changeVersion == all.filter { $0.userId == "user-0" }.map(\.changeVersion).max())
        if kind == .file { try store.close() }
    }

    @Test("Busy and locked errors become HubError.unavailable; others propagate")
    func errorTranslation() throws {
        let busy = SQLiteStore.translate(SQLiteStore.sampleDatabaseError(busy: true))
        #expect((busy as? HubError)?.code == .unavailable)
        let constraint = SQLiteStore.translate(SQLiteStore.sampleDatabaseError(busy: false))
        #expect(!(constraint is HubError))
    }

    @Test("Payloads decode the same through the cache of recent ones, past its limit too")
    func payloadCache() throws {
        let payloads = (0...JSONColumn.recentPayloadLimit).map {
            NotificationPayload(rawContent: "raw \($0)", visualContent: VisualContent(title: "t\($0)", body: "b"))
        }
        let texts = try payloads.map { try JSONColumn.encode($0) }
        for _ in 0..<2 {
            for (text, payload) in zip(texts, payloads) { #expect(try JSONColumn.decodePayload(text) == payload) }
        }
        #expect(throws: (any Error).self) { try JSONColumn.decodePayload("{not json") }
    }

    @Test("The stored default target policy is what the JSON encoder writes, and reads back as the default")
    func defaultTargetPolicy() throws {
        #expect(try JSONColumn.encodeValue(TargetPolicy()) == JSONColumn.everyPlatform)
        #expect(try JSONColumn.encode(TargetPolicy()) == JSONColumn.everyPlatform)
        #expect(try JSONColumn.decodePolicy(JSONColumn.everyPlatform) == TargetPolicy())
        let some = TargetPolicy(platformTypes: [.ios, .android])
        #expect(try JSONColumn.decodePolicy(JSONColumn.encode(some)) == some)
    }
}

/// A publish request for `appNotificationId`, now, expiring in a day.
private func request(_ key: FeedKey, _ appNotificationId: String) -> PublishRequest {
    let now = Date()
    return PublishRequest(
        key: key,
        draft: NotificationDraft(
            appNotificationId: appNotificationId, payload: NotificationPayload(rawContent: appNotificationId)),
        newId: UUID().uuidString, expirationDateTime: now.addingTimeInterval(86_400), deliveryMode: .shoulderTap,
        now: now)
}
