import Foundation
import HubCore
import HubTesting
import Testing

@testable import HubPostgres

/// A broadcast on two hub instances sharing one database: both lease its chunks.
@Suite(
    "Broadcasts on several instances",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct BroadcastInstancesTests {
    @Test("two instances share a broadcast's chunks; every user gets it once")
    func twoInstancesShareChunks() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        var dispatcher = HubInstance.dispatcher(idle: .milliseconds(100))
        // One send at a time, 20 ms each: an instance paces its chunks by its sends, so the other
        // one, looking every 50 ms, takes chunks meanwhile.
        dispatcher.laneConcurrency[.apns] = 1
        var broadcasts = BroadcastConfiguration()
        broadcasts.chunkSize = 4
        broadcasts.pollInterval = .milliseconds(50)
        let slow: @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in
            try? await Task.sleep(for: .milliseconds(20))  // a provider's round trip, not a wait
            return .accepted
        }
        let plugs = (a: StorePlug(), b: StorePlug())
        let a = try HubInstance(
            "a", schema: schema, dispatcher: dispatcher, apns: slow, broadcasts: broadcasts, plug: plugs.a)
        let b = try HubInstance(
            "b", schema: schema, dispatcher: dispatcher, apns: slow, broadcasts: broadcasts, plug: plugs.b)
        let users = (0..<80).map { "user-\(1000 + $0)" }
        try await MultiInstanceTests().withInstances(a, b) {
            for user in users { try await a.register("phone", user: user) }
            let created = try await a.hub.createBroadcast(
                app: HubInstance.app.id, audience: .users(count: users.count), users: users,
                draft: NotificationDraft(appNotificationId: "all-hands", payload: NotificationPayload(rawContent: "x")))
            #expect(
                await eventually(timeout: .seconds(60)) {
                    (try? await b.hub.broadcast(app: HubInstance.app.id, id: created.id))?.status == .done
                })
            let done = try await b.hub.broadcast(app: HubInstance.app.id, id: created.id)
            #expect(done.published == 80)
            #expect(done.audienceSize == 80)
            for user in users {
                let history = try await a.store.history(
                    FeedKey(appId: HubInstance.app.id, userId: user), filter: HistoryFilter())
                #expect(history.filter { $0.appNotificationId == "all-hands" }.count == 1, "\(user)")
            }
            let chunks = (a: plugs.a.calls("finishBroadcastChunk"), b: plugs.b.calls("finishBroadcastChunk"))
            #expect(chunks.a > 0 && chunks.b > 0, "both instances published chunks: \(chunks)")
            #expect(chunks.a + chunks.b == 20, "each chunk once: \(chunks)")
        }
    }
}
