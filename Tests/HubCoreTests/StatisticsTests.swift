import Foundation
import HubTesting
import Testing

@testable import HubCore

@Suite("Statistics over time: histogram, accumulator, flush")
struct StatisticsTests {
    // MARK: Histogram

    @Test("latencies fall in log-spaced buckets with inclusive upper bounds, +inf last")
    func histogramBuckets() {
        #expect(LatencyHistogram.bucketCount == 17)
        #expect(LatencyHistogram.bucket(milliseconds: -5) == 0)
        #expect(LatencyHistogram.bucket(milliseconds: 1) == 0)
        #expect(LatencyHistogram.bucket(milliseconds: 2) == 1)
        #expect(LatencyHistogram.bucket(milliseconds: 3) == 2)
        #expect(LatencyHistogram.bucket(milliseconds: 300_000) == 15)
        #expect(LatencyHistogram.bucket(milliseconds: 300_001) == 16)
    }

    @Test("percentiles interpolate inside the bucket that holds the rank, over merged histograms")
    func percentiles() {
        var fast = LatencyHistogram()
        for _ in 0..<90 { fast.record(milliseconds: 8) }
        var slow = LatencyHistogram()
        for _ in 0..<10 { slow.record(milliseconds: 900) }
        #expect(LatencyHistogram().percentile(0.5) == nil)

        var merged = fast
        merged.merge(slow)
        #expect(merged.count == 100)
        // Ranks 1…90 lie in (5, 10], ranks 91…100 in (500, 1000].
        #expect(abs((merged.percentile(0.5) ?? 0) - (5 + 5 * 50.0 / 90)) < 1e-9)
        #expect(merged.percentile(0.9) == 10)
        #expect(merged.percentile(0.99) == 950)
        #expect(fast.percentile(0.99) ?? 0 <= 10, "the slow ones only count once merged")

        var overflow = LatencyHistogram()
        overflow.record(milliseconds: 3_600_000)
        #expect(overflow.percentile(0.5) == 300_000, "the +inf bucket answers the last bound")
        #expect(LatencyHistogram(counts: merged.counts) == merged, "read back from a store's columns")
    }

    // MARK: Accumulator

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func delivery(createdAt: Date = t0) -> Delivery {
        Delivery(
            id: 1, appId: "notes.contoso.com", userId: "alice", endpointId: "phone", kind: .visible,
            notificationId: "n", changeVersion: 1, priority: .none, attempts: 1, createdAt: createdAt, dueAt: createdAt)
    }

    @Test("publishes and send outcomes are counted per app, transport and minute")
    func accumulatorCounts() throws {
        let statistics = StatisticsAccumulator()
        let app = "notes.contoso.com"
        statistics.published(app: app, at: Self.t0)
        statistics.published(app: app, at: Self.t0.addingTimeInterval(59))
        statistics.published(app: app, at: Self.t0.addingTimeInterval(60))
        let at = Self.t0.addingTimeInterval(0.25)
        let delivery = Self.delivery()
        statistics.record(delivery, transport: .apns, .finish(.delivered, detail: nil, goneSince: nil), at: at)
        statistics.record(delivery, transport: .apns, .retry(dueAt: at, error: "503 ServiceUnavailable"), at: at)
        statistics.record(
            delivery, transport: .apns, .finish(.endpointGone, detail: "Unregistered", goneSince: nil), at: at)
        statistics.record(
            delivery, transport: .apns,
            .finish(.rejected, detail: "400 BadDeviceToken: the device token is not valid", goneSince: nil), at: at)
        statistics.record(
            delivery, transport: .apns, .finish(.gaveUp, detail: "gave up after 12 attempts", goneSince: nil), at: at)
        statistics.record(delivery, transport: .apns, .suspend(reason: "403 InvalidProviderToken: check keyId"), at: at)
        statistics.record(
            delivery, transport: .apns, .finish(.superseded, detail: "a newer tap", goneSince: nil), at: at)
        statistics.record(delivery, transport: .fcm, .finish(.delivered, detail: nil, goneSince: nil), at: at)

        let deltas = statistics.take()
        #expect(statistics.take().isEmpty, "taking empties the accumulator")
        func delta(_ transport: String, _ minute: Date) -> StatisticsCounts? {
            deltas.first { $0.transport == transport && $0.minute == minute && $0.appId == app }?.counts
        }
        #expect(deltas.count == 4)
        #expect(delta(StatisticsDelta.appWide, Self.t0)?.published == 2)
        #expect(delta(StatisticsDelta.appWide, Self.t0.addingTimeInterval(60))?.published == 1)
        let apns = try #require(delta("apns", Self.t0))
        #expect(apns.delivered == 1 && apns.retried == 1 && apns.gone == 1 && apns.published == 0)
        #expect(
            apns.failed == ["400 BadDeviceToken": 1, "gaveUp": 1, "403 InvalidProviderToken": 1],
            "reasons are the provider's labels; superseded deliveries are not failures")
        #expect(apns.latency.counts[LatencyHistogram.bucket(milliseconds: 250)] == 1)
        #expect(apns.latency.count == 1)
        #expect(delta("fcm", Self.t0)?.delivered == 1)
    }

    @Test("reasons are cut to the provider's label and bounded; a flush that failed is put back and merged")
    func accumulatorReasonsAndPutBack() throws {
        #expect(StatisticsAccumulator.reason("Unregistered") == "Unregistered")
        #expect(StatisticsAccumulator.reason("  ") == "unknown")
        #expect(StatisticsAccumulator.reason(String(repeating: "x", count: 500)).count == 80)

        let statistics = StatisticsAccumulator()
        let delivery = Self.delivery()
        for index in 0..<(StatisticsAccumulator.maxReasons + 3) {
            statistics.record(
                delivery, transport: .apns, .finish(.rejected, detail: "reason-\(index)", goneSince: nil), at: Self.t0)
        }
        let taken = statistics.take()
        let failed = try #require(taken.first?.counts.failed)
        #expect(failed.count == StatisticsAccumulator.maxReasons + 1)
        #expect(failed[StatisticsAccumulator.otherReason] == 3)

        statistics.record(delivery, transport: .apns, .retry(dueAt: Self.t0, error: "503"), at: Self.t0)
        statistics.putBack(taken)
        let merged = try #require(statistics.take().first?.counts)
        #expect(merged.retried == 1)
        #expect(merged.failed.values.reduce(0, +) == Int64(StatisticsAccumulator.maxReasons + 3))
    }

    @Test("past its entry limit the accumulator drops new entries and says how many")
    func accumulatorBound() {
        let statistics = StatisticsAccumulator(maxKeys: 2)
        statistics.published(app: "a", at: Self.t0)
        statistics.published(app: "b", at: Self.t0)
        statistics.published(app: "c", at: Self.t0)
        statistics.published(app: "a", at: Self.t0)
        #expect(statistics.pendingCount == 2)
        #expect(statistics.takeDropped() == 1)
        #expect(statistics.takeDropped() == 0)
        #expect(statistics.take().map(\.counts.published).sorted() == [1, 2])
    }

    // MARK: Through a hub

    @Test("a hub counts publishes and outcomes with its clock, keeps them across a failed flush, reads them back")
    func hubFlushAndRead() async throws {
        let clock = ManualClock.fixed()
        let plug = StorePlug()
        let apns = TestHub.apnsLike { delivery in
            // The provider takes 300 ms: the latency is measured on the hub's clock.
            clock.advance(by: .milliseconds(300))
            return delivery.endpoint.token == "gone-token"
                ? .endpointGone(since: nil, reason: "Unregistered") : .accepted
        }
        var dispatcher = TestHub.fastDispatcher
        dispatcher.shutdownFlushTimeout = .milliseconds(200)
        let test = try TestHub(apns: apns, clock: clock, dispatcher: dispatcher, plug: plug)
        try await test.running {
            try await test.register("phone", platform: .ios, transport: .apns, token: "good-token")
            try await test.register("old-phone", platform: .ios, transport: .apns, token: "gone-token")
            try await test.publish("n1")
            #expect(await eventually { apns.deliveries.count == 2 })
            #expect(
                await eventually {
                    (try? await test.hub.appEndpoints(app: TestHub.app.id, state: .inactive).count) == 1
                })

            plug.unplug(.fail)
            await #expect(throws: HubError.self) { try await test.hub.flushStatistics() }
            plug.plugIn()
            try await test.hub.flushStatistics()

            let report = try await test.hub.statistics(app: TestHub.app.id)
            #expect(report.total.published == 1, "kept across the failed flush")
            let series = try #require(report.transports.first { $0.transport == "apns" })
            #expect(series.total.delivered == 1)
            #expect(series.total.gone == 1)
            #expect(series.endpoints == EndpointCounts(transport: "apns", active: 1, inactive: 1))
            let latency = try #require(series.total.latency.percentile(0.5))
            #expect(latency > 200 && latency <= 1000, "300 ms or 600 ms after the publish: \(latency)")
            #expect(report.buckets.map(\.start) == [StatisticsResolution.minute.start(of: Self.t0)])

            let hours = try await test.hub.statistics(app: TestHub.app.id, resolution: .hour)
            #expect(hours.total == report.total, "each flush adds to the hour too")

            await #expect(throws: HubError.self) {
                try await test.hub.statistics(
                    app: TestHub.app.id, from: Self.t0.addingTimeInterval(-86_401), to: Self.t0)
            }
            await #expect(throws: HubError.self) {
                try await test.hub.statistics(app: TestHub.app.id, from: Self.t0, to: Self.t0)
            }
        }
    }
}
