import Foundation
import HubCore
import HubEmulators
import HubSQLite
import HubTesting
import Logging
import Testing

@testable import HubAPNS

@Suite("APNs through a real hub: a replaced key parks deliveries; a restart with the right key sends them")
struct APNSSuspendedHubTests {
    @Test("InvalidProviderToken parks the taps (not dropped); a new hub with the fixed key delivers them")
    func restartWithFixedKey() async throws {
        let harness = try await APNSHarness.start()
        let path = try TemporaryFolder.path("apns-suspended")
        var quiet = Logger(label: "hub")
        quiet.logLevel = .critical

        func hub(_ credentials: APNSCredentials) throws -> Hub {
            var app = APNSHarness.app
            app.credentials.apns = credentials
            var configuration = HubConfiguration(apps: [app])
            configuration.dispatcher.idleInterval = .milliseconds(20)
            return try Hub(
                configuration: configuration, store: try SQLiteStore(path: path), transports: [harness.transport],
                logger: quiet)
        }

        // The operator's hub.yaml still names a key that was revoked and replaced in Apple's portal.
        let revoked = APNSTestKey(keyID: harness.key.keyID, teamID: harness.key.teamID)
        let broken = try hub(revoked.credentials())
        try await broken.store.migrate()
        for device in 1...2 {
            _ = try await broken.registerEndpoint(
                app: APNSHarness.app.id, user: "alice", id: "device\(device)",
                EndpointRegistration(
                    platform: .ios, appId: APNSHarness.bundleID, transport: .apns, token: APNSHarness.token(device)))
        }
        let first = Task { try await broken.run() }
        _ = try await broken.publish(
            app: APNSHarness.app.id, user: "alice",
            NotificationDraft(appNotificationId: "n-1", payload: NotificationPayload(rawContent: "{}")))
        let parked = try await eventually { try await broken.deliveryStatistics().suspended.first?.count == 2 }
        #expect(parked)
        let statistics = try await broken.deliveryStatistics()
        #expect(statistics.suspended.first?.lastReason?.contains("InvalidProviderToken") == true)
        #expect(statistics.finished["apns"] == nil, "nothing dropped")
        #expect(harness.emulator.requestCounts(status: 200).isEmpty)
        first.cancel()
        _ = await first.result

        // Fixed and restarted: the new hub un-parks the taps on start and APNs accepts them.
        let fixed = try hub(harness.credentials)
        let second = Task { try await fixed.run() }
        let delivered = try await eventually {
            let statistics = try await fixed.deliveryStatistics()
            return statistics.finished["apns"]?["delivered"] == 2 && statistics.suspended.isEmpty
        }
        #expect(delivered)
        #expect(Set(harness.emulator.requestCounts(status: 200).keys) == [APNSHarness.token(1), APNSHarness.token(2)])
        second.cancel()
        _ = await second.result
        await harness.shutdown()
    }
}
