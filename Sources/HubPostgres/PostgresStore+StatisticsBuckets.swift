public import Foundation
public import HubCore
import PostgresNIO

// Statistics over time (`StatisticsStore`): per app, transport and minute or hour, counters and a
// latency histogram in `hub_statistics_bucket`, failures by reason in `hub_statistics_failure`.
// Every instance adds its flushes to the same rows (`ON CONFLICT … DO UPDATE SET x = t.x +
// excluded.x`), so a bucket counts all of them.
extension PostgresStore {
    /// The columns of the latency histogram, one per bucket of ``HubCore/LatencyHistogram`` in
    /// its order: `latency_le_<ms>` for each bound, then `latency_inf`.
    static let latencyColumns = LatencyHistogram.bounds.map { "latency_le_\($0)" } + ["latency_inf"]

    /// The counters of a bucket row after its key, in the order reads and writes use.
    static let counterColumns = ["published", "delivered", "retried", "gone"] + latencyColumns

    /// Version 6: statistics over time.
    ///
    /// - `hub_statistics_bucket`: one row per (app, resolution `minute` | `hour`, transport — `''`
    ///   for the app's publishes —, bucket start), counters that flushes add to, and one column
    ///   per latency bucket (histograms add up column by column).
    /// - `hub_statistics_failure`: failures per bucket and reason.
    /// - `…_age`: the sweep's purge by resolution and age.
    /// - `hub_endpoint_transport_state`: counts an app's endpoints per transport and state from
    ///   the index.
    static let schemaV6 = [
        """
        CREATE TABLE hub_statistics_bucket (
            app_id text NOT NULL,
            resolution text NOT NULL CHECK (resolution IN ('minute', 'hour')),
            transport text NOT NULL,
            bucket_start timestamptz NOT NULL,
            \(counterColumns.map { "\($0) bigint NOT NULL DEFAULT 0" }.joined(separator: ",\n    ")),
            PRIMARY KEY (app_id, resolution, transport, bucket_start)
        )
        """,
        "CREATE INDEX hub_statistics_bucket_age ON hub_statistics_bucket (resolution, bucket_start)",
        """
        CREATE TABLE hub_statistics_failure (
            app_id text NOT NULL,
            resolution text NOT NULL CHECK (resolution IN ('minute', 'hour')),
            transport text NOT NULL,
            bucket_start timestamptz NOT NULL,
            reason text NOT NULL,
            count bigint NOT NULL,
            PRIMARY KEY (app_id, resolution, transport, bucket_start, reason)
        )
        """,
        "CREATE INDEX hub_statistics_failure_age ON hub_statistics_failure (resolution, bucket_start)",
        "CREATE INDEX hub_endpoint_transport_state ON hub_endpoint (app_id, transport, state)",
    ]

    /// One row to add to: a bucket's key.
    struct BucketKey: Hashable, Comparable {
        let appId: String
        let resolution: String
        let transport: String
        let start: Date

        static func < (a: BucketKey, b: BucketKey) -> Bool {
            (a.appId, a.resolution, a.transport, a.start) < (b.appId, b.resolution, b.transport, b.start)
        }
    }

    /// Adds each delta to its minute row and its hour row, in one transaction of two statements.
    /// The deltas of one flush are summed per row first (one statement may not update a row
    /// twice), and rows are written in key order, so concurrent flushes of several instances
    /// lock them in the same order.
    public func addStatistics(_ deltas: [StatisticsDelta]) async throws {
        var rows: [BucketKey: StatisticsCounts] = [:]
        for delta in deltas {
            for resolution in StatisticsResolution.allCases {
                let key = BucketKey(
                    appId: delta.appId, resolution: resolution.rawValue, transport: delta.transport,
                    start: resolution.start(of: delta.minute))
                rows[key, default: StatisticsCounts()].add(delta.counts)
            }
        }
        guard !rows.isEmpty else { return }
        let sorted = rows.sorted { $0.key < $1.key }
        let bucketQuery = Self.bucketUpsert(sorted)
        let failureQuery = Self.failureUpsert(sorted)
        try await transaction { db in
            try await db.rows(bucketQuery)
            if let failureQuery { try await db.rows(failureQuery) }
        }
    }

    /// The upsert of the bucket rows: one array per column, unnested.
    private static func bucketUpsert(_ rows: [(key: BucketKey, value: StatisticsCounts)]) -> PostgresQuery {
        var binds = PostgresBindings(capacity: 4 + counterColumns.count)
        appendKeys(rows.map(\.key), to: &binds)
        binds.append(rows.map(\.value.published))
        binds.append(rows.map(\.value.delivered))
        binds.append(rows.map(\.value.retried))
        binds.append(rows.map(\.value.gone))
        for index in 0..<LatencyHistogram.bucketCount {
            binds.append(rows.map { $0.value.latency.counts[index] })
        }
        let types = ["text", "text", "text", "timestamptz"] + counterColumns.map { _ in "bigint" }
        let arrays = types.enumerated().map { "$\($0.offset + 1)::\($0.element)[]" }
        return PostgresQuery(
            unsafeSQL: """
                INSERT INTO hub_statistics_bucket AS t (app_id, resolution, transport, bucket_start, \
                \(counterColumns.joined(separator: ", ")))
                SELECT * FROM unnest(\(arrays.joined(separator: ", ")))
                ON CONFLICT (app_id, resolution, transport, bucket_start) DO UPDATE SET
                \(counterColumns.map { "\($0) = t.\($0) + excluded.\($0)" }.joined(separator: ", "))
                """,
            binds: binds)
    }

    /// The upsert of the failure rows, or `nil` when there are none.
    private static func failureUpsert(_ rows: [(key: BucketKey, value: StatisticsCounts)]) -> PostgresQuery? {
        var keys: [BucketKey] = []
        var reasons: [String] = []
        var counts: [Int64] = []
        for (key, value) in rows {
            for (reason, count) in value.failed.sorted(by: { $0.key < $1.key }) {
                keys.append(key)
                reasons.append(reason)
                counts.append(count)
            }
        }
        guard !keys.isEmpty else { return nil }
        var binds = PostgresBindings(capacity: 6)
        appendKeys(keys, to: &binds)
        binds.append(reasons)
        binds.append(counts)
        return PostgresQuery(
            unsafeSQL: """
                INSERT INTO hub_statistics_failure AS t (app_id, resolution, transport, bucket_start, reason, count)
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[])
                ON CONFLICT (app_id, resolution, transport, bucket_start, reason) DO UPDATE SET
                count = t.count + excluded.count
                """,
            binds: binds)
    }

    private static func appendKeys(_ keys: [BucketKey], to binds: inout PostgresBindings) {
        binds.append(keys.map(\.appId))
        binds.append(keys.map(\.resolution))
        binds.append(keys.map(\.transport))
        binds.append(keys.map(\.start))
    }

    /// The app's buckets of `resolution` starting in `from..<to`, by transport, then start.
    public func statistics(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date
    ) async throws -> [StatisticsBucket] {
        // Failures first: a flush that commits between the two reads adds to buckets already
        // read rather than showing failures of buckets not read.
        let failureRows = try await rows(
            """
            SELECT transport, bucket_start, reason, count FROM hub_statistics_failure
            WHERE app_id = \(appId) AND resolution = \(resolution.rawValue)
                AND bucket_start >= \(from) AND bucket_start < \(to)
            """)
        let bucketRows = try await rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT transport, bucket_start, \(Self.counterColumns.joined(separator: ", "))
                    FROM hub_statistics_bucket
                    WHERE app_id = $1 AND resolution = $2 AND bucket_start >= $3 AND bucket_start < $4
                    ORDER BY transport COLLATE "C", bucket_start
                    """,
                binds: Self.rangeBindings(appId, resolution, from, to)))
        var failures: [String: [Date: [String: Int64]]] = [:]
        for row in failureRows {
            let (transport, start, reason, count) = try row.decode((String, Date, String, Int64).self)
            failures[transport, default: [:]][start, default: [:]][reason] = count
        }
        return try bucketRows.map { row in
            let cells = row.makeRandomAccess()
            let transport = try cells[0].decode(String.self)
            let start = try cells[1].decode(Date.self)
            let values = try (2..<(2 + Self.counterColumns.count)).map { try cells[$0].decode(Int64.self) }
            return StatisticsBucket(
                transport: transport, start: start,
                counts: StatisticsCounts(
                    published: values[0], delivered: values[1], retried: values[2], gone: values[3],
                    failed: failures[transport]?[start] ?? [:], latency: LatencyHistogram(counts: Array(values[4...]))))
        }
    }

    private static func rangeBindings(
        _ appId: String, _ resolution: StatisticsResolution, _ from: Date, _ to: Date
    ) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 4)
        binds.append(appId)
        binds.append(resolution.rawValue)
        binds.append(from)
        binds.append(to)
        return binds
    }

    /// The app's active and inactive endpoints per transport (`hub_endpoint_transport_state`).
    public func endpointCounts(appId: String) async throws -> [EndpointCounts] {
        try await rows(
            """
            SELECT transport, count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state <> 'active')
            FROM hub_endpoint WHERE app_id = \(appId) GROUP BY transport ORDER BY transport COLLATE "C"
            """
        ).map { row in
            let (transport, active, inactive) = try row.decode((String, Int, Int).self)
            return EndpointCounts(transport: transport, active: active, inactive: inactive)
        }
    }

    /// Deletes the buckets older than their resolution's retention before `now` (the sweep's).
    func purgeStatistics(now: Date) async throws {
        for resolution in StatisticsResolution.allCases {
            let before = now.addingTimeInterval(-resolution.retention.seconds)
            try await rows(
                "DELETE FROM hub_statistics_bucket WHERE resolution = \(resolution.rawValue) AND bucket_start < \(before)"
            )
            try await rows(
                "DELETE FROM hub_statistics_failure WHERE resolution = \(resolution.rawValue) AND bucket_start < \(before)"
            )
        }
    }
}
