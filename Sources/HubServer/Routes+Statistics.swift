import Foundation
import HubCore
import Hummingbird

extension HubAPI {
    /// `GET /v1/apps/{app}/statistics/history?resolution=minute|hour&from=…&to=…`: the app's
    /// statistics over time from the store (``Hub/statistics(app:resolution:from:to:)``), per
    /// transport and for the app as a whole. The admin token or a publisher key of the app.
    ///
    /// Defaults: minute buckets over the last hour; hour buckets over the last 24 hours. A range
    /// covers at most 24 hours of minutes or 30 days of hours; `from` must be before `to`.
    func addStatisticsRoutes(to router: HubRouter) {
        router.get("/v1/apps/:app/statistics/history") { request, context in
            let app = try pathApp(request, context: context, caller: .publisherOrAdmin)
            try authenticatePublisherOrAdmin(request, app: app)
            let query = request.uri.queryParameters
            var errors: [HubError.FieldError] = []
            var resolution = StatisticsResolution.minute
            if let text = query["resolution"].map(String.init) {
                if let parsed = StatisticsResolution(rawValue: text) {
                    resolution = parsed
                } else {
                    errors.append(.init(field: "resolution", message: "must be minute or hour"))
                }
            }
            func date(_ name: String) -> Date? {
                guard let text = query[name[...]].map(String.init) else { return nil }
                guard let date = JSON.date(text) else {
                    errors.append(
                        .init(field: name, message: "must be an ISO 8601 date-time such as 2025-01-31T12:00:00Z"))
                    return nil
                }
                return date
            }
            let from = date("from")
            let to = date("to")
            if !errors.isEmpty { throw HubError.invalid(errors) }
            let report = try await hub.statistics(app: app.id, resolution: resolution, from: from, to: to)
            return try JSON.response(StatisticsHistoryResource(report))
        }
    }
}

/// The answer of `GET /v1/apps/{app}/statistics/history`.
struct StatisticsHistoryResource: Encodable, Sendable {
    var appId: String
    var resolution: String
    var from: Date
    var to: Date
    /// The app as a whole over the range.
    var total: StatisticsCountsResource
    /// The app as a whole per bucket (publishes and every transport), oldest first.
    var buckets: [StatisticsCountsResource]
    var transports: [TransportHistoryResource]

    init(_ report: StatisticsReport) {
        appId = report.appId
        resolution = report.resolution.rawValue
        from = report.from
        to = report.to
        (total, buckets) = StatisticsCountsResource.series(report.total, report.buckets, published: true)
        transports = report.transports.map(TransportHistoryResource.init)
    }
}

/// One transport's statistics over the range, and its endpoints now.
struct TransportHistoryResource: Encodable, Sendable {
    struct Endpoints: Encodable, Sendable {
        var active: Int
        var inactive: Int
    }

    var transport: String
    var endpoints: Endpoints
    var total: StatisticsCountsResource
    var buckets: [StatisticsCountsResource]

    init(_ series: TransportStatistics) {
        transport = series.transport
        endpoints = Endpoints(active: series.endpoints.active, inactive: series.endpoints.inactive)
        (total, buckets) = StatisticsCountsResource.series(series.total, series.buckets, published: false)
    }
}

/// The counts of a bucket or a range. `published` only for the app as a whole (publishes have
/// no transport); `latencyMs` percentiles only when something was delivered.
struct StatisticsCountsResource: Encodable, Sendable {
    struct Latency: Encodable, Sendable {
        /// How many latencies were measured (the deliveries accepted).
        var count: Int64
        var p50: Double?
        var p90: Double?
        var p99: Double?
    }

    var start: Date?
    var published: Int64?
    var delivered: Int64
    var retried: Int64
    var gone: Int64
    var failed: [String: Int64]
    var latencyMs: Latency

    /// The counts over a range (no start) and those of each of its buckets.
    static func series(
        _ total: StatisticsCounts, _ buckets: [StatisticsBucket], published: Bool
    ) -> (total: Self, buckets: [Self]) {
        (
            Self(total, start: nil, published: published),
            buckets.map { Self($0.counts, start: $0.start, published: published) }
        )
    }

    init(_ counts: StatisticsCounts, start: Date?, published: Bool) {
        self.start = start
        self.published = published ? counts.published : nil
        delivered = counts.delivered
        retried = counts.retried
        gone = counts.gone
        failed = counts.failed
        /// Tenths of a millisecond: the histogram is not more precise than that anyway.
        func rounded(_ value: Double?) -> Double? { value.map { ($0 * 10).rounded() / 10 } }
        latencyMs = Latency(
            count: counts.latency.count, p50: rounded(counts.latency.percentile(0.5)),
            p90: rounded(counts.latency.percentile(0.9)), p99: rounded(counts.latency.percentile(0.99)))
    }
}
