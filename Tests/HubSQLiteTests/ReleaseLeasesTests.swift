import Foundation
import HubCore
import HubSQLite
import Testing

@Suite("Releasing a crashed instance's leases")
struct ReleaseLeasesTests {
    let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
    let now = Date(timeIntervalSince1970: 1_750_000_000)

    func publish(_ store: SQLiteStore, _ id: String, at time: Date) async throws {
        _ = try await store.publish(
            PublishRequest(
                key: key, draft: NotificationDraft(appNotificationId: id, payload: NotificationPayload(rawContent: id)),
                newId: id, expirationDateTime: time.addingTimeInterval(3600), deliveryMode: .shoulderTap, now: time))
    }

    func makeStore() async throws -> SQLiteStore {
        let store = try SQLiteStore.inMemory()
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "phone", appId: key.appId, userId: key.userId, platform: .ios, platformAppId: "com.contoso.notes",
                transport: .apns, token: "aa01", attributes: ["environment": "production"], registeredAt: now))
        return store
    }

    @Test("a restarted instance gets its own unfinished claims back at once; others' leases stay")
    func releasesOwnLeases() async throws {
        let store = try await makeStore()
        try await publish(store, "n1", at: now)
        let claimed = try await store.claimDeliveries(
            limit: 10, now: now, owner: "hub-a", leaseUntil: now.addingTimeInterval(60))
        #expect(claimed.count == 1)
        try await store.releaseLeases(owner: "hub-b")
        #expect(try await store.claimDeliveries(limit: 10, now: now, owner: "hub-a", leaseUntil: now + 60).isEmpty)
        try await store.releaseLeases(owner: "hub-a")
        let again = try await store.claimDeliveries(limit: 10, now: now, owner: "hub-a", leaseUntil: now + 60)
        #expect(again.map(\.delivery.id) == claimed.map(\.delivery.id))
    }

    @Test("a released tap whose endpoint has a newer pending tap is superseded by it")
    func supersededByNewerTap() async throws {
        let store = try await makeStore()
        try await publish(store, "n1", at: now)
        _ = try await store.claimDeliveries(limit: 10, now: now, owner: "hub-a", leaseUntil: now + 60)
        try await publish(store, "n2", at: now + 1)
        try await store.releaseLeases(owner: "hub-a")
        let claimed = try await store.claimDeliveries(limit: 10, now: now + 2, owner: "hub-a", leaseUntil: now + 62)
        #expect(claimed.map(\.delivery.notificationId) == ["n2"])
        let statistics = try await store.deliveryStatistics()
        #expect(statistics.finished["apns"]?["superseded"] == 1)
    }
}
