public import struct Foundation.Date

/// Delivery statistics over time, per app and transport, kept by the store so that they survive
/// restarts and add up across the instances that share it.
///
/// The hub counts in memory and adds its counts to the store every few seconds
/// (``HubConfiguration/statisticsFlushInterval``) with ``addStatistics(_:)``: each delta is added to
/// the minute bucket it names *and* to that minute's hour bucket, so both resolutions are always
/// there to read. Adding is a sum (several instances add to one bucket; idempotence is not
/// promised: a delta added twice counts twice).
///
/// Retention: a store's ``FeedStore/sweep(now:purgeBefore:planner:)`` also removes the buckets
/// older than their resolution's ``StatisticsResolution/retention`` before the sweep's `now`
/// (minutes after 24 hours, hours after 30 days).
///
/// Every ``Store`` is one. A store that keeps no statistics inherits defaults that throw
/// ``HubError`` `unsupported` (the hub then stops counting, once, with a log line);
/// ``endpointCounts(appId:)`` defaults to counting ``EndpointStore/endpoints(appId:state:)``.
public protocol StatisticsStore: Sendable {
    /// Adds each delta's counts to its minute bucket and to the hour bucket of that minute, in
    /// one transaction.
    func addStatistics(_ deltas: [StatisticsDelta]) async throws

    /// The app's buckets of `resolution` whose start lies in `from..<to`, ordered by transport,
    /// then start. Only buckets that were added to are returned. Callers bound the range (the hub
    /// reads at most 24 hours of minutes or 30 days of hours).
    func statistics(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date
    ) async throws -> [StatisticsBucket]

    /// The app's endpoints now, active and inactive, per transport, ordered by transport.
    func endpointCounts(appId: String) async throws -> [EndpointCounts]
}

extension StatisticsStore {
    public func addStatistics(_ deltas: [StatisticsDelta]) async throws {
        throw HubError.statisticsUnsupported
    }

    public func statistics(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date
    ) async throws -> [StatisticsBucket] {
        throw HubError.statisticsUnsupported
    }
}

extension StatisticsStore where Self: EndpointStore {
    /// Counts the app's endpoints by listing them: correct, but it reads every endpoint of the
    /// app. Stores should count in the database instead.
    public func endpointCounts(appId: String) async throws -> [EndpointCounts] {
        var counts: [String: EndpointCounts] = [:]
        for endpoint in try await endpoints(appId: appId, state: nil) {
            let transport = endpoint.transport.rawValue
            var entry = counts[transport] ?? EndpointCounts(transport: transport, active: 0, inactive: 0)
            if endpoint.state == .active { entry.active += 1 } else { entry.inactive += 1 }
            counts[transport] = entry
        }
        return counts.values.sorted { $0.transport < $1.transport }
    }
}

extension HubError {
    /// What a store without statistics over time throws.
    static let statisticsUnsupported = HubError(
        .unsupported,
        "This store keeps no statistics over time: use the SQLite or the PostgreSQL store, or implement "
            + "StatisticsStore in yours.")
}

/// The width of a statistics bucket.
public enum StatisticsResolution: String, Sendable, Hashable, CaseIterable, Codable {
    /// One-minute buckets, kept 24 hours.
    case minute
    /// One-hour buckets, kept 30 days.
    case hour

    /// The bucket's width in seconds.
    public var seconds: Int64 {
        switch self {
        case .minute: 60
        case .hour: 3_600
        }
    }

    /// How long a store keeps buckets of this resolution (and the longest range one read covers).
    public var retention: Duration {
        switch self {
        case .minute: .seconds(86_400)
        case .hour: .seconds(30 * 86_400)
        }
    }

    /// The start of the bucket that holds `date`.
    public func start(of date: Date) -> Date {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let start = seconds - ((seconds % self.seconds) + self.seconds) % self.seconds
        return Date(timeIntervalSince1970: Double(start))
    }
}

/// What happened in one bucket of one app and transport.
public struct StatisticsCounts: Sendable, Hashable, Codable {
    /// Notifications stored by a publish (new or updated); counted per app, under the transport
    /// ``StatisticsDelta/appWide``.
    public var published: Int64
    /// Deliveries the provider accepted.
    public var delivered: Int64
    /// Attempts that will be tried again (back-off).
    public var retried: Int64
    /// Deliveries whose endpoint the provider declared gone.
    public var gone: Int64
    /// Deliveries that failed for good (rejected, given up) or were parked for a configuration
    /// fault (suspended), by reason: the provider's label (such as `400 BadDeviceToken`) for
    /// rejections and suspensions, `gaveUp` when attempts or age ran out.
    public var failed: [String: Int64]
    /// Publish → provider acceptance latencies of the delivered ones.
    public var latency: LatencyHistogram

    public init(
        published: Int64 = 0, delivered: Int64 = 0, retried: Int64 = 0, gone: Int64 = 0,
        failed: [String: Int64] = [:], latency: LatencyHistogram = LatencyHistogram()
    ) {
        self.published = published
        self.delivered = delivered
        self.retried = retried
        self.gone = gone
        self.failed = failed
        self.latency = latency
    }

    /// Whether nothing was counted.
    public var isEmpty: Bool {
        published == 0 && delivered == 0 && retried == 0 && gone == 0 && failed.isEmpty && latency.count == 0
    }

    /// Adds `other`'s counts to these.
    public mutating func add(_ other: StatisticsCounts) {
        published += other.published
        delivered += other.delivered
        retried += other.retried
        gone += other.gone
        failed.merge(other.failed, uniquingKeysWith: +)
        latency.merge(other.latency)
    }
}

/// Counts to add to the store for one app, transport and minute (see ``StatisticsStore``).
public struct StatisticsDelta: Sendable, Hashable {
    /// The transport of counts that belong to the app as a whole (``StatisticsCounts/published``).
    public static let appWide = ""

    public var appId: String
    /// A ``TransportID``'s raw value, or ``appWide``.
    public var transport: String
    /// The start of the minute counted (``StatisticsResolution/start(of:)``).
    public var minute: Date
    public var counts: StatisticsCounts

    public init(appId: String, transport: String, minute: Date, counts: StatisticsCounts) {
        self.appId = appId
        self.transport = transport
        self.minute = minute
        self.counts = counts
    }
}

/// One bucket as a store reads it back.
public struct StatisticsBucket: Sendable, Hashable {
    /// A ``TransportID``'s raw value, or ``StatisticsDelta/appWide``.
    public var transport: String
    /// The start of the minute or hour.
    public var start: Date
    public var counts: StatisticsCounts

    public init(transport: String, start: Date, counts: StatisticsCounts) {
        self.transport = transport
        self.start = start
        self.counts = counts
    }
}

/// An app's endpoints of one transport, now.
public struct EndpointCounts: Sendable, Hashable, Codable {
    public var transport: String
    public var active: Int
    /// Endpoints a provider declared gone (the feedback list).
    public var inactive: Int

    public init(transport: String, active: Int, inactive: Int) {
        self.transport = transport
        self.active = active
        self.inactive = inactive
    }
}
