import Foundation
import HubTesting
import Logging
import Synchronization
import Testing

@testable import HubCore

@Suite("suspended deliveries: parked for a configuration fault, resumed when the hub starts again")
struct SuspendedDeliveryTests {
    static let reason = "403 InvalidProviderToken: check keyId, teamId and privateKey"

    @Test("suspended deliveries are parked (not finished, not retried), counted, and sent by the next hub on the store")
    func parkedThenResumed() async throws {
        let path = try TemporaryFolder.path("suspended")
        let broken = RecordingTransport(id: .apns) { _ in .suspended(reason: Self.reason) }
        let clock = ManualClock()
        let plug = StorePlug()
        let first = try TestHub(apns: broken, clock: clock, storePath: path, plug: plug)
        try await first.running {
            try await first.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await first.register("tablet", platform: .ios, transport: .apns, token: "aa02")
            try await first.register("android", platform: .android, transport: .fcm, token: "t")
            try await first.publish("n1")
            #expect(
                try await eventually {
                    try await first.hub.deliveryStatistics().suspended.first?.count == 2
                })
            // The lane goes on: the other transport's delivery is sent and finished.
            #expect(await eventually { first.fcm.deliveries.count == 1 })
            // An hour later, the lanes having claimed again, the parked deliveries were not sent again.
            #expect(await eventually { first.hub.dispatcher.isIdle })
            let claims = plug.calls("claimDeliveries")
            clock.advance(by: .seconds(3600))
            #expect(await eventually { plug.calls("claimDeliveries") > claims && first.hub.dispatcher.isIdle })
            #expect(broken.deliveries.count == 2, "a parked delivery is not claimed again")
            let statistics = try await first.hub.deliveryStatistics()
            #expect(
                statistics.suspended == [
                    SuspendedDeliveries(
                        appId: TestHub.app.id, transport: .apns, count: 2, lastReason: Self.reason,
                        lastSuspendedAt: statistics.suspended.first?.lastSuspendedAt)
                ])
            #expect(statistics.suspended.first?.lastSuspendedAt != nil)
            #expect(statistics.finished["apns"] == nil, "nothing of the suspended transport is finished (dropped)")
            #expect(statistics.pending == 2)
            #expect(try await first.hub.store.nextDueDate() == nil, "parked deliveries never come due by time")
        }

        // The operator fixes the credentials and restarts: a new hub on the same store sends them.
        let fixed = RecordingTransport(id: .apns)
        let second = try TestHub(apns: fixed, storePath: path)
        try await second.running {
            #expect(await eventually { fixed.deliveries.count == 2 })
            #expect(Set(fixed.deliveries.map(\.endpoint.id)) == ["phone", "tablet"])
            let settled = try await eventually {
                let statistics = try await second.hub.deliveryStatistics()
                let delivered = statistics.finished["apns"]?["delivered"] == 2
                return delivered && statistics.suspended.isEmpty && statistics.pending == 0
            }
            #expect(settled, "delivered, nothing parked or pending")
        }
    }

    @Test("the first suspension of an app and transport is logged at error level with its reason, later ones not")
    func loggedOncePerAppAndTransport() async throws {
        let logs = LogCapture()
        let logger = logs.logger(label: "hub")
        var count = 0
        let apns = RecordingTransport(id: .apns) { _ in .suspended(reason: "\(Self.reason) (apns-id \(UUID()))") }
        let test = try TestHub(apns: apns, logger: logger)
        try await test.running {
            for device in ["a", "b", "c"] {
                try await test.register(device, platform: .ios, transport: .apns, token: "aa0\(device)")
            }
            try await test.publish("n1")
            #expect(try await eventually { try await test.hub.deliveryStatistics().suspended.first?.count == 3 })
            count = logs.messages(atLeast: .error).filter { $0.contains("deliveries suspended") }.count
        }
        #expect(count == 1, "\(logs.all)")
        #expect(
            logs.messages(atLeast: .error).first { $0.contains("deliveries suspended") }?.contains(
                "InvalidProviderToken")
                == true)
    }

    @Test("deliveries of a transport the hub does not run are parked, and sent by a hub that runs it")
    func transportNotEnabled() async throws {
        let path = try TemporaryFolder.path("stray")
        let first = try TestHub(storePath: path)
        try await first.running {
            // Registered while the hub ran the WNS transport; this one started without it.
            _ = try await first.store.upsertEndpoint(
                Endpoint(
                    id: "pc", appId: TestHub.app.id, userId: "alice", platform: .windows,
                    platformAppId: "Contoso.Notes_8wekyb3d8bbwe", transport: .wns,
                    token: "https://x.notify.windows.com/",
                    registeredAt: Date()))
            try await first.publish("n1")
            let parked = try await eventually {
                try await first.hub.deliveryStatistics().suspended.first?.transport == .wns
            }
            #expect(parked)
            let statistics = try await first.hub.deliveryStatistics()
            #expect(statistics.suspended.first?.lastReason?.contains("not enabled") == true)
            #expect(statistics.finished["wns"] == nil, "not dropped as rejected")
        }
        let wns = RecordingTransport(id: .wns)
        let second = try TestHub(fcm: wns, storePath: path)
        try await second.running {
            #expect(await eventually { wns.deliveries.map(\.endpoint.id) == ["pc"] })
        }
    }

    @Test("a new tap to an endpoint whose tap is parked un-parks it: the lane tries the endpoint again")
    func newTapRetriesParkedEndpoint() async throws {
        let failing = Mutex(true)
        let apns = RecordingTransport(id: .apns) { _ in
            failing.withLock { $0 } ? .suspended(reason: Self.reason) : .accepted
        }
        let test = try TestHub(apns: apns)
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "aa01")
            try await test.publish("n1")
            #expect(try await eventually { try await test.hub.deliveryStatistics().suspended.first?.count == 1 })
            failing.withLock { $0 = false }
            let second = try await test.publish("n2")
            #expect(await eventually { apns.deliveries.count == 2 })
            #expect(apns.deliveries.last?.delivery.changeVersion == second.changeVersion)
            let settled = try await eventually {
                let statistics = try await test.hub.deliveryStatistics()
                let delivered = statistics.finished["apns"]?["delivered"] == 1
                return delivered && statistics.suspended.isEmpty
            }
            #expect(settled, "delivered, nothing parked")
        }
    }
}
