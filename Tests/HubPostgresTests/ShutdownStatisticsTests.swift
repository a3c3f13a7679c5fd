import Foundation
import HubCore
import HubPolling
import HubTesting
import Logging
import Testing

@testable import HubPostgres

// An embedder (hub-bench pipeline's cross-instance wake) runs hubs in tasks of its own and stops
// them by cancelling those tasks. PostgresNIO refuses queries of a cancelled task, so a last
// flush run in the cancelled task lost its counts ("stopping with statistics not written").
@Suite(
    "PostgreSQL: an embedded hub stopped by cancellation",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct ShutdownStatisticsTests {
    @Test("Hub.stop cancels the hub's task and its last statistics flush still reaches the store")
    func cancelledHubWritesLastStatistics() async throws {
        let store = try PostgresTestDatabase.makeStore(schema: PostgresTestDatabase.freshSchema())
        try await PostgresTestDatabase.running([store]) {
            try await store.migrate()
            var configuration = HubConfiguration(apps: [HubInstance.app])
            // No periodic flush while the test runs: only the last one can write the counts.
            configuration.statisticsFlushInterval = .seconds(3600)
            var logger = Logger(label: "hub.tests.shutdown")
            logger.logLevel = .critical
            let signals = FeedSignals()
            let hub = try Hub(
                configuration: configuration, store: store, transports: [PollingTransport(signals: signals)],
                signals: signals, logger: logger)
            let running = Task { try await hub.run() }
            for index in 0..<3 {
                _ = try await hub.publish(
                    app: HubInstance.app.id, user: "alice",
                    NotificationDraft(
                        appNotificationId: "n\(index)", payload: NotificationPayload(rawContent: "{}")))
            }
            let now = hub.now()
            let before = try await store.statistics(
                appId: HubInstance.app.id, resolution: .minute, from: now.addingTimeInterval(-3600), to: now + 60)
            #expect(before.isEmpty, "nothing flushed before the stop")

            await Hub.stop([running])

            let buckets = try await store.statistics(
                appId: HubInstance.app.id, resolution: .minute, from: now.addingTimeInterval(-3600), to: now + 60)
            #expect(buckets.map(\.counts.published).reduce(0, +) == 3, "the three publishes, flushed at the stop")
        }
    }
}
