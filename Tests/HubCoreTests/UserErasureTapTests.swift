import Foundation
import HubSQLite
import HubTesting
import Logging
import Testing

@testable import HubCore

/// `Hub.eraseUser`: the devices are tapped before the rows go, a provider that never answers
/// holds the erasure up only until the tap timeout, and the audit line has who and how much but
/// no content.
@Suite("User erasure taps")
struct UserErasureTapTests {
    @Test("every active push endpoint gets a tap announcing version 0 before its rows go; audited without content")
    func tapsThenErases() async throws {
        let logs = LogCapture()
        let test = try TestHub(logger: logs.logger(label: "hub"))
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: String(repeating: "a", count: 64))
            try await test.register("pixel", platform: .android, transport: .fcm, token: "fcm-token-0123456789")
            try await test.register("web", platform: .ios, transport: .polling)
            try await test.register(
                "other", user: "bob", platform: .ios, transport: .apns, token: "b" + String(repeating: "c", count: 63))
            try await test.publish("secret-title-xyz")
            _ = try await test.publish("for-bob", user: "bob")
            test.apns.reset()
            test.fcm.reset()

            let report = try await test.hub.eraseUser(app: TestHub.app.id, user: "alice", by: "publisher backend")
            #expect(report.devicesTapped == 2)
            #expect(report.devicesNotReached == 0 && report.devicesUnanswered == 0)
            #expect(report.erased.notifications == 1 && report.erased.endpoints == 3)
            // Filtered: bob's publish may still be tapped by the dispatcher meanwhile.
            let taps = (test.apns.deliveries + test.fcm.deliveries).filter {
                $0.delivery.changeVersion == UserErasure.tapVersion
            }
            #expect(Set(taps.map(\.endpoint.id)) == ["phone", "pixel"], "bob's device is not tapped")
            for tap in taps {
                #expect(tap.kind == .shoulderTap && tap.notification == nil, "content-free")
                #expect(tap.delivery.userId == "alice")
            }
            #expect(try await test.store.endpoints(FeedKey(appId: TestHub.app.id, userId: "alice")) == [])
            #expect(try await test.store.endpoints(FeedKey(appId: TestHub.app.id, userId: "bob")).count == 1)

            let audit = try #require(logs.records.first { $0.message == "user data erased" })
            #expect(audit.level == .notice)
            #expect(audit.metadata["by"] == "publisher backend")
            #expect(audit.metadata["user"] == "alice")
            #expect(audit.metadata["notifications"] == "1" && audit.metadata["endpoints"] == "3")
            #expect(audit.metadata["devicesTapped"] == "2")
            #expect(audit.metadata["at"] != nil)
            #expect(!logs.records.contains { $0.text.contains("secret-title-xyz") }, "no content in the logs")
        }
    }

    @Test("a provider that never answers holds the erasure up only until the tap timeout")
    func stalledProviderTimesOut() async throws {
        let clock = ManualClock.fixed()
        let stalled = Gate()
        let apns = TestHub.apnsLike { delivery in
            if delivery.delivery.changeVersion == UserErasure.tapVersion { await stalled.pass() }
            return .accepted
        }
        let test = try TestHub(apns: apns, clock: clock)
        try await test.hub.store.migrate()
        try await test.register("phone", platform: .ios, transport: .apns, token: String(repeating: "a", count: 64))
        try await test.register("pixel", platform: .android, transport: .fcm, token: "fcm-token-0123456789")

        let erasure = Task {
            try await test.hub.eraseUser(app: TestHub.app.id, user: "alice", by: "admin", tapTimeout: .seconds(5))
        }
        #expect(await eventually { stalled.waiting == 1 && clock.sleeperCount >= 1 }, "the APNs tap hangs")
        #expect(try await test.store.endpoints(FeedKey(appId: TestHub.app.id, userId: "alice")).count == 2)
        clock.advance(by: .seconds(5))
        let report = try await erasure.value
        #expect(report.devicesUnanswered >= 1, "APNs had not answered")
        #expect(report.devicesTapped + report.devicesUnanswered == 2, "FCM's tap was sent too")
        #expect(report.erased.endpoints == 2, "erased all the same")
        #expect(try await test.store.endpoints(FeedKey(appId: TestHub.app.id, userId: "alice")) == [])
        stalled.open()
    }

    @Test("an erasure the store refuses leaves every row, answers the error and is logged as failed")
    func failedErasureIsLogged() async throws {
        let logs = LogCapture()
        let store = try SQLiteStore.inMemory()
        try await store.migrate()
        let hub = try Hub(
            configuration: HubConfiguration(apps: [TestHub.app]), store: InterceptedStore(store, RefusesErasure()),
            transports: [TestHub.apnsLike()], logger: logs.logger(label: "hub"))
        let key = FeedKey(appId: TestHub.app.id, userId: "alice")
        _ = try await hub.registerEndpoint(
            app: key.appId, user: key.userId, id: "phone",
            EndpointRegistration(
                platform: .ios, appId: "com.contoso.notes", transport: .apns, token: String(repeating: "a", count: 64)))
        await #expect(throws: HubError.self) {
            try await hub.eraseUser(app: key.appId, user: key.userId, by: "admin")
        }
        #expect(try await store.endpoints(key).count == 1, "nothing erased")
        let failure = try #require(logs.records.first { $0.message.hasPrefix("erasing user data failed") })
        #expect(failure.level == .warning && failure.metadata["by"] == "admin")
        #expect(!logs.records.contains { $0.message == "user data erased" })
    }
}

/// Fails the store's erasure, and only that.
private struct RefusesErasure: StoreInterceptor {
    func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T {
        if name == "eraseUser" { throw HubError(.unavailable, "the test refuses the erasure") }
        return try await call()
    }
}
