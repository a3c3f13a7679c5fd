public import struct Foundation.Date

/// An app's statistics over a range, as ``Hub/statistics(app:resolution:from:to:)`` reads them.
public struct StatisticsReport: Sendable, Hashable {
    public var appId: String
    public var resolution: StatisticsResolution
    /// The start of the first bucket of the range.
    public var from: Date
    /// The end of the range (exclusive).
    public var to: Date
    /// The app as a whole, per bucket: its publishes and every transport's counts added up.
    /// Buckets where nothing happened are left out.
    public var buckets: [StatisticsBucket]
    /// The app as a whole over the range.
    public var total: StatisticsCounts
    /// Each transport that counted something in the range or has endpoints now, ordered by name.
    public var transports: [TransportStatistics]

    /// Groups a store's buckets (ordered by transport, then start) and the app's endpoint counts.
    public init(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date, buckets stored: [StatisticsBucket],
        endpoints: [EndpointCounts]
    ) {
        self.appId = appId
        self.resolution = resolution
        self.from = from
        self.to = to
        var appWide: [Date: StatisticsCounts] = [:]
        var total = StatisticsCounts()
        var byTransport: [String: TransportStatistics] = [:]
        for endpoint in endpoints {
            byTransport[endpoint.transport] = TransportStatistics(
                transport: endpoint.transport, buckets: [], total: StatisticsCounts(), endpoints: endpoint)
        }
        for bucket in stored {
            appWide[bucket.start, default: StatisticsCounts()].add(bucket.counts)
            total.add(bucket.counts)
            guard bucket.transport != StatisticsDelta.appWide else { continue }
            var series =
                byTransport[bucket.transport]
                ?? TransportStatistics(
                    transport: bucket.transport, buckets: [], total: StatisticsCounts(),
                    endpoints: EndpointCounts(transport: bucket.transport, active: 0, inactive: 0))
            series.buckets.append(bucket)
            series.total.add(bucket.counts)
            byTransport[bucket.transport] = series
        }
        self.buckets = appWide.sorted { $0.key < $1.key }.map {
            StatisticsBucket(transport: StatisticsDelta.appWide, start: $0.key, counts: $0.value)
        }
        self.total = total
        self.transports = byTransport.values.sorted { $0.transport < $1.transport }.map { series in
            var series = series
            series.buckets.sort { $0.start < $1.start }
            return series
        }
    }
}

/// One transport's part of a ``StatisticsReport``.
public struct TransportStatistics: Sendable, Hashable {
    public var transport: String
    /// Its buckets in the range, oldest first; those where nothing happened are left out.
    public var buckets: [StatisticsBucket]
    /// Its counts over the range.
    public var total: StatisticsCounts
    /// The app's endpoints of this transport now.
    public var endpoints: EndpointCounts

    public init(transport: String, buckets: [StatisticsBucket], total: StatisticsCounts, endpoints: EndpointCounts) {
        self.transport = transport
        self.buckets = buckets
        self.total = total
        self.endpoints = endpoints
    }
}
