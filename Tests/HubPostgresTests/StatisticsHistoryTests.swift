import Foundation
import HubCore
import HubTesting
import Testing

@testable import HubPostgres

/// Statistics over time with several instances on one database: every instance adds its counts
/// to the same rows, so each reads what all of them counted.
@Suite(
    "Statistics over time across instances",
    .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresStatisticsHistoryTests {
    @Test("two hub instances on one database both flush, and each reads the counts of both")
    func twoInstancesCount() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let dispatcher = HubInstance.dispatcher(idle: .milliseconds(50))
        let a = try HubInstance("a", schema: schema, dispatcher: dispatcher)
        let b = try HubInstance("b", schema: schema, dispatcher: dispatcher)
        try await a.store.migrate()
        try await PostgresTestDatabase.running([a.store, b.store]) {
            let hubs = HubRunner([a.hub, b.hub])
            try await a.register("phone", user: "alice")
            try await b.register("phone", user: "bob")
            try await b.register("tablet", user: "bob")
            _ = try await a.publish("n-a", user: "alice")
            _ = try await b.publish("n-b", user: "bob")
            #expect(await eventually { a.apns.deliveries.count + b.apns.deliveries.count == 3 })
            // Graceful shutdown: each hub writes what it counted since its last flush.
            #expect(await hubs.stop(), "the hubs did not shut down")

            for instance in [a, b] {
                let report = try await instance.hub.statistics(app: HubInstance.app.id)
                #expect(report.total.published == 2, "read through \(instance.name)")
                let apns = try #require(report.transports.first { $0.transport == "apns" })
                #expect(apns.total.delivered == 3)
                #expect(apns.total.latency.count == 3)
                #expect(apns.endpoints == EndpointCounts(transport: "apns", active: 3, inactive: 0))
                let hours = try await instance.hub.statistics(app: HubInstance.app.id, resolution: .hour)
                #expect(hours.total == report.total, "each flush adds to the hour too")
            }
        }
    }

    @Test("concurrent flushes of two stores to the same buckets add up")
    func concurrentFlushesAddUp() async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let a = try PostgresTestDatabase.makeStore(schema: schema)
        let b = try PostgresTestDatabase.makeStore(schema: schema)
        try await a.migrate()
        try await PostgresTestDatabase.running([a, b]) {
            let minute = StatisticsResolution.minute.start(of: Date())
            var counts = StatisticsCounts(delivered: 1, failed: ["400 BadDeviceToken": 1])
            counts.latency.record(milliseconds: 30)
            // Two minutes of one hour in each flush: the hour row is added to twice per flush.
            let deltas = [minute, minute.addingTimeInterval(-60)].map {
                StatisticsDelta(appId: HubInstance.app.id, transport: "apns", minute: $0, counts: counts)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in [a, b] {
                    for _ in 0..<10 { group.addTask { try await store.addStatistics(deltas) } }
                }
                try await group.waitForAll()
            }
            let minutes = try await a.statistics(
                appId: HubInstance.app.id, resolution: .minute, from: minute, to: minute.addingTimeInterval(60))
            #expect(minutes.map(\.counts.delivered) == [20])
            #expect(minutes.first?.counts.failed == ["400 BadDeviceToken": 20])
            #expect(minutes.first?.counts.latency.count == 20)
            let hour = StatisticsResolution.hour.start(of: minute.addingTimeInterval(-60))
            let hours = try await b.statistics(
                appId: HubInstance.app.id, resolution: .hour, from: hour, to: minute.addingTimeInterval(60))
            #expect(hours.map(\.counts.delivered).reduce(0, +) == 40)
        }
    }
}
