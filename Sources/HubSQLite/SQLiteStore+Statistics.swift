public import Foundation
import GRDB
public import HubCore

// Statistics over time (`StatisticsStore`): per app, transport and minute or hour, counters and
// a latency histogram in `statisticsBucket`, failures by reason in `statisticsFailure`.
extension SQLiteStore {
    /// The columns of the latency histogram, one per bucket of ``HubCore/LatencyHistogram`` in
    /// its order: `latencyLe<ms>` for each bound, then `latencyInf`.
    static let latencyColumns =
        LatencyHistogram.bounds.map { "latencyLe\($0)" } + ["latencyInf"]

    /// The counters of a bucket row after its key, in the order reads and writes use.
    static let counterColumns = ["published", "delivered", "retried", "gone"] + latencyColumns

    /// `v7`: statistics over time.
    ///
    /// - `statisticsBucket`: one row per (app, resolution `minute` | `hour`, transport — `''` for
    ///   the app's publishes —, bucket start in seconds since 1970), counters that flushes add to,
    ///   and one column per latency bucket (histograms add up column by column).
    /// - `statisticsFailure`: failures per bucket and reason.
    /// - `statisticsBucket_age`, `statisticsFailure_age`: the sweep's purge by resolution and age.
    /// - `endpoint_transportState`: counts the app's endpoints per transport and state from the
    ///   index alone.
    static func addStatisticsTables(_ db: Database) throws {
        let latency = latencyColumns.map { "\($0) INTEGER NOT NULL DEFAULT 0" }.joined(separator: ",\n")
        try db.execute(
            sql: """
                CREATE TABLE statisticsBucket (
                    appId TEXT NOT NULL,
                    resolution TEXT NOT NULL CHECK (resolution IN ('minute', 'hour')),
                    transport TEXT NOT NULL,
                    bucketStart INTEGER NOT NULL,
                    published INTEGER NOT NULL DEFAULT 0,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    retried INTEGER NOT NULL DEFAULT 0,
                    gone INTEGER NOT NULL DEFAULT 0,
                    \(latency),
                    PRIMARY KEY (appId, resolution, transport, bucketStart)
                ) WITHOUT ROWID;
                CREATE INDEX statisticsBucket_age ON statisticsBucket (resolution, bucketStart);

                CREATE TABLE statisticsFailure (
                    appId TEXT NOT NULL,
                    resolution TEXT NOT NULL CHECK (resolution IN ('minute', 'hour')),
                    transport TEXT NOT NULL,
                    bucketStart INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (appId, resolution, transport, bucketStart, reason)
                ) WITHOUT ROWID;
                CREATE INDEX statisticsFailure_age ON statisticsFailure (resolution, bucketStart);

                CREATE INDEX endpoint_transportState ON endpoint (appId, transport, state);
                """)
    }

    /// Adds each delta to its minute row and its hour row, in one transaction. Committed like
    /// outcomes (without an fsync of its own): a power cut loses at most the last flush.
    public func addStatistics(_ deltas: [StatisticsDelta]) async throws {
        guard !deltas.isEmpty else { return }
        try await write(.relaxed) { db in
            let counters = Self.counterColumns
            let bucket = try db.cachedStatement(
                sql: """
                    INSERT INTO statisticsBucket (appId, resolution, transport, bucketStart, \
                    \(counters.joined(separator: ", ")))
                    VALUES (?, ?, ?, ?, \(counters.map { _ in "?" }.joined(separator: ", ")))
                    ON CONFLICT (appId, resolution, transport, bucketStart) DO UPDATE SET
                    \(counters.map { "\($0) = \($0) + excluded.\($0)" }.joined(separator: ", "))
                    """)
            let failure = try db.cachedStatement(
                sql: """
                    INSERT INTO statisticsFailure (appId, resolution, transport, bucketStart, reason, count)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (appId, resolution, transport, bucketStart, reason) DO UPDATE SET
                    count = count + excluded.count
                    """)
            for delta in deltas {
                let counts = delta.counts
                let values: [Int64] =
                    [counts.published, counts.delivered, counts.retried, counts.gone] + counts.latency.counts
                for resolution in StatisticsResolution.allCases {
                    let start = Int64(resolution.start(of: delta.minute).timeIntervalSince1970)
                    let key: [(any DatabaseValueConvertible)?] = [
                        delta.appId, resolution.rawValue, delta.transport, start,
                    ]
                    try bucket.execute(arguments: StatementArguments(key + values.map { $0 }))
                    for (reason, count) in counts.failed {
                        try failure.execute(arguments: StatementArguments(key + [reason, count]))
                    }
                }
            }
        }
    }

    /// The app's buckets of `resolution` starting in `from..<to`, by transport, then start.
    public func statistics(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date
    ) async throws -> [StatisticsBucket] {
        try await read { db in
            let arguments: StatementArguments = [appId, resolution.rawValue, from.storedSeconds, to.storedSeconds]
            let range = "appId = ? AND resolution = ? AND bucketStart >= ? AND bucketStart < ?"
            var failures: [String: [Int64: [String: Int64]]] = [:]
            let failureRows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: "SELECT transport, bucketStart, reason, count FROM statisticsFailure WHERE \(range)"),
                arguments: arguments)
            while let row = try failureRows.next() {
                let (transport, start, reason, count): (String, Int64, String, Int64) = (row[0], row[1], row[2], row[3])
                failures[transport, default: [:]][start, default: [:]][reason] = count
            }
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT transport, bucketStart, \(Self.counterColumns.joined(separator: ", "))
                        FROM statisticsBucket WHERE \(range) ORDER BY transport, bucketStart
                        """),
                arguments: arguments)
            var buckets: [StatisticsBucket] = []
            while let row = try rows.next() {
                let transport: String = row[0]
                let start: Int64 = row[1]
                let values = (2..<(2 + Self.counterColumns.count)).map { row[$0] as Int64 }
                buckets.append(
                    StatisticsBucket(
                        transport: transport, start: Date(timeIntervalSince1970: Double(start)),
                        counts: StatisticsCounts(
                            published: values[0], delivered: values[1], retried: values[2], gone: values[3],
                            failed: failures[transport]?[start] ?? [:],
                            latency: LatencyHistogram(counts: Array(values[4...])))))
            }
            return buckets
        }
    }

    /// The app's active and inactive endpoints per transport (from `endpoint_transportState`).
    public func endpointCounts(appId: String) async throws -> [EndpointCounts] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT transport, sum(state = 'active'), sum(state <> 'active') FROM endpoint
                        WHERE appId = ? GROUP BY transport ORDER BY transport
                        """),
                arguments: [appId]
            ).map { row in
                let (transport, active, inactive): (String, Int, Int) = (row[0], row[1], row[2])
                return EndpointCounts(transport: transport, active: active, inactive: inactive)
            }
        }
    }

    /// Deletes the buckets older than their resolution's retention before `now` (the sweep's).
    static func purgeStatistics(now: Date, _ db: Database) throws {
        for resolution in StatisticsResolution.allCases {
            let before = now.timeIntervalSince1970 - resolution.retention.seconds
            for table in ["statisticsBucket", "statisticsFailure"] {
                try db.cachedStatement(sql: "DELETE FROM \(table) WHERE resolution = ? AND bucketStart < ?")
                    .execute(arguments: [resolution.rawValue, before])
            }
        }
    }
}
