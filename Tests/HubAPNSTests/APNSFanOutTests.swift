import Foundation
import HubCore
import HubSQLite
import HubTesting
import Logging
import Testing

@testable import HubAPNS

@Suite("APNs through a real hub: a fan-out of 10,000 notifications")
struct APNSFanOutTests {
    static let users = 100
    static let endpointsPerUser = 100

    @Test("every live token gets exactly one, the 1% unregistered become inactive and get nothing retried")
    func fanOut() async throws {
        let harness = try await APNSHarness.start()
        var app = APNSHarness.app
        app.credentials.apns = harness.credentials
        var configuration = HubConfiguration(apps: [app])
        // 100 devices a user: more than the default limit of endpoints per user allows.
        configuration.maxEndpointsPerUser = nil
        configuration.dispatcher.batchSize = 1000
        configuration.dispatcher.concurrency = 256
        configuration.dispatcher.idleInterval = .milliseconds(20)
        configuration.dispatcher.initialBackoff = .milliseconds(20)
        configuration.dispatcher.maxBackoff = .milliseconds(100)
        let store = try SQLiteStore.inMemory()
        try await store.migrate()
        // The hub logs each of the 10,000 registrations at info: keep warnings and above only.
        var quiet = Logger(label: "hub")
        quiet.logLevel = .warning
        let hub = try Hub(configuration: configuration, store: store, transports: [harness.transport], logger: quiet)

        let appID = app.id
        let tokens = (0..<Self.users * Self.endpointsPerUser).map(APNSHarness.token)
        let registeredAt = ContinuousClock.now
        // One user's devices per task: the store commits concurrent registrations together.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<Self.users {
                group.addTask {
                    for device in 0..<Self.endpointsPerUser {
                        _ = try await hub.registerEndpoint(
                            app: appID, user: "user\(user)", id: "device\(device)",
                            EndpointRegistration(
                                platform: .ios, appId: APNSHarness.bundleID, transport: .apns,
                                token: APNSHarness.token(user * Self.endpointsPerUser + device)))
                    }
                }
            }
            try await group.waitForAll()
        }
        print("registered \(tokens.count) endpoints in \(ContinuousClock.now - registeredAt)")
        // Every 100th token died after it registered.
        let dead = Set(tokens.enumerated().filter { $0.offset % 100 == 37 }.map(\.element))
        let diedAt = Date().addingTimeInterval(1)
        for token in dead { harness.emulator.markUnregistered(token: token, at: diedAt) }

        let running = Task { try await hub.run() }
        let started = ContinuousClock.now
        for user in 0..<Self.users {
            _ = try await hub.publish(
                app: app.id, user: "user\(user)",
                NotificationDraft(
                    appNotificationId: "n-\(user)", payload: NotificationPayload(rawContent: "{\"n\":\(user)}")))
        }
        let drained = try await eventually(timeout: .seconds(90)) {
            try await hub.deliveryStatistics().pending == 0
        }
        let elapsed = ContinuousClock.now - started
        #expect(drained)

        let accepted = harness.emulator.requestCounts(status: 200)
        let all = harness.emulator.requestCounts()
        #expect(accepted.count == tokens.count - dead.count)
        #expect(accepted.values.allSatisfy { $0 == 1 }, "exactly one per live token")
        #expect(dead.allSatisfy { all[$0] == 1 && accepted[$0] == nil }, "one attempt per dead token, no retry")
        #expect(all.values.reduce(0, +) == tokens.count)

        let inactive = try await hub.appEndpoints(app: app.id, state: .inactive)
        #expect(inactive.count == dead.count)
        #expect(Set(inactive.compactMap(\.token)) == dead)
        #expect(inactive.allSatisfy { $0.inactiveSince.map { abs($0.timeIntervalSince(diedAt)) < 0.01 } ?? false })
        let statistics = try await hub.deliveryStatistics()
        #expect(statistics.finished["apns"]?["delivered"] == tokens.count - dead.count)
        #expect(statistics.finished["apns"]?["endpointGone"] == dead.count)
        print("fan-out of \(tokens.count) taps through the hub: \(elapsed)")

        running.cancel()
        _ = await running.result
        await harness.shutdown()
    }
}
