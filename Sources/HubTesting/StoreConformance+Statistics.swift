import Foundation
public import HubCore

// Checks of statistics over time (`StatisticsStore`).
extension StoreConformance {
    /// The minute of ``Fixture/t0`` and its hour.
    private static var minute0: Date { StatisticsResolution.minute.start(of: Fixture.t0) }
    private static var hour0: Date { StatisticsResolution.hour.start(of: Fixture.t0) }

    /// Counts with every field set, `scale` times a base.
    private static func counts(_ scale: Int64, reason: String = "400 BadDeviceToken") -> StatisticsCounts {
        var latency = LatencyHistogram()
        for _ in 0..<scale { latency.record(milliseconds: 40) }
        latency.record(milliseconds: 400_000)
        return StatisticsCounts(
            published: 0, delivered: 3 * scale, retried: 2 * scale, gone: scale, failed: [reason: scale, "gaveUp": 1],
            latency: latency)
    }

    /// Deltas add up (the same delta added twice counts twice), per app, transport and minute,
    /// and each minute adds to its hour; reads return the range `from..<to`, by transport and start.
    public static func statisticsAddUp(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let m0 = minute0
        let m1 = m0.addingTimeInterval(60)
        let published = StatisticsDelta(
            appId: Fixture.app, transport: StatisticsDelta.appWide, minute: m0, counts: StatisticsCounts(published: 5))
        let apns = StatisticsDelta(appId: Fixture.app, transport: "apns", minute: m0, counts: counts(1))
        let later = StatisticsDelta(appId: Fixture.app, transport: "apns", minute: m1, counts: counts(2, reason: "x"))
        let fcm = StatisticsDelta(appId: Fixture.app, transport: "fcm", minute: m1, counts: counts(1))
        let other = StatisticsDelta(appId: "other.example.com", transport: "apns", minute: m0, counts: counts(7))
        try await store.addStatistics([apns, published, other])
        try await store.addStatistics([apns, later, fcm])
        try await store.addStatistics([])

        var twice = counts(1)
        twice.add(counts(1))
        let minutes = try await store.statistics(
            appId: Fixture.app, resolution: .minute, from: m0, to: m0.addingTimeInterval(3_600))
        try expect.equal(
            minutes,
            [
                StatisticsBucket(transport: "", start: m0, counts: StatisticsCounts(published: 5)),
                StatisticsBucket(transport: "apns", start: m0, counts: twice),
                StatisticsBucket(transport: "apns", start: m1, counts: counts(2, reason: "x")),
                StatisticsBucket(transport: "fcm", start: m1, counts: counts(1)),
            ], "minute buckets: added up, by transport then start, other apps left out")
        try expect.equal(
            try await store.statistics(appId: Fixture.app, resolution: .minute, from: m1, to: m1).count, 0,
            "an empty range")
        try expect.equal(
            try await store.statistics(appId: Fixture.app, resolution: .minute, from: m0, to: m1).map(\.start),
            [m0, m0], "the range's end is exclusive")

        var hour = twice
        hour.add(counts(2, reason: "x"))
        let hours = try await store.statistics(
            appId: Fixture.app, resolution: .hour, from: hour0, to: hour0.addingTimeInterval(3_600))
        try expect.equal(hours.map(\.transport), ["", "apns", "fcm"], "hour buckets by transport")
        try expect.equal(hours.map(\.start), [hour0, hour0, hour0], "hour buckets start at the hour")
        try expect.equal(hours.dropFirst().first?.counts, hour, "an hour adds up its minutes")
        try expect.equal(hours.first?.counts.published, 5, "publishes in the hour")
    }

    /// The sweep removes minute buckets older than 24 hours and hour buckets older than 30 days
    /// (before its `now`), failures with them, and keeps the rest.
    public static func statisticsPurge(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let now = hour0.addingTimeInterval(40 * 86_400)
        let old = now.addingTimeInterval(-31 * 86_400)  // both resolutions expired
        let day = now.addingTimeInterval(-2 * 86_400)  // its minute expired, its hour kept
        let recent = StatisticsResolution.minute.start(of: now.addingTimeInterval(-600))  // both kept
        try await store.addStatistics(
            [old, day, recent].map {
                StatisticsDelta(appId: Fixture.app, transport: "apns", minute: $0, counts: counts(1))
            })
        _ = try await store.sweep(now: now, purgeBefore: now.addingTimeInterval(-7 * 86_400))
        let minutes = try await store.statistics(
            appId: Fixture.app, resolution: .minute, from: old.addingTimeInterval(-3_600), to: now)
        try expect.equal(minutes.map(\.start), [recent], "minute buckets after the sweep")
        try expect.equal(minutes.first?.counts, counts(1), "a kept minute keeps its failures")
        let hours = try await store.statistics(
            appId: Fixture.app, resolution: .hour, from: old.addingTimeInterval(-3_600), to: now)
        try expect.equal(
            hours.map(\.start),
            [StatisticsResolution.hour.start(of: day), StatisticsResolution.hour.start(of: recent)],
            "hour buckets after the sweep")
        try expect.equal(hours.first?.counts.failed, counts(1).failed, "a kept hour keeps its failures")
    }

    /// An app's endpoints are counted per transport and state, now.
    public static func endpointCountsPerTransport(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try expect.equal(try await store.endpointCounts(appId: Fixture.app), [], "no endpoints")
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e2"))
        _ = try await store.upsertEndpoint(Fixture.endpoint("e3", platform: .android, transport: .fcm))
        _ = try await store.upsertEndpoint(Fixture.endpoint("b1", of: Fixture.bob))
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "x1", appId: "other.example.com", userId: "alice", platform: .ios,
                platformAppId: "com.example.other", transport: .apns, token: "other-token",
                attributes: ["environment": "production"], registeredAt: Fixture.t0))
        try await Fixture.publish(store, Fixture.draft("n-1"))
        let gone = try await Fixture.claim(store, at: Fixture.at(1)).filter { $0.delivery.endpointId == "e2" }
        try expect.equal(gone.count, 1, "e2's tap claimed")
        for item in gone {
            try await store.finishDelivery(
                id: item.delivery.id, result: .endpointGone, detail: "Unregistered", goneSince: nil, at: Fixture.at(2))
        }
        try expect.equal(
            try await store.endpointCounts(appId: Fixture.app),
            [
                EndpointCounts(transport: "apns", active: 2, inactive: 1),
                EndpointCounts(transport: "fcm", active: 1, inactive: 0),
            ], "per transport, by name; other apps left out")
    }
}
