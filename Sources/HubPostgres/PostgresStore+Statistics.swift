import Foundation
import HubCore
import Logging
import PostgresNIO

// Statistics that keep up with tables that grow fast.
//
// The store's hot statements are prepared once per connection, and PostgreSQL keeps the generic
// plan it made for one until a table it reads is analyzed again. On a new database (a new
// deployment, a benchmark run) that plan is made while the tables look empty, and autovacuum
// analyzes them only at its next round (`autovacuum_naptime`, a minute by default): measured with
// two instances on a new database, finishing outcomes walked the whole partial index
// `hub_delivery_due` for every ID (0.2 ms a row) until then. So while a table grows faster than
// its statistics, the store analyzes it itself: when the rows changed since its last analysis
// reach ``statisticsMinimumChanges`` and the row count those statistics know. That is a doubling,
// so a table growing to a million rows is analyzed about ten times on the way, each a sample of
// at most 30,000 rows; once autovacuum keeps up (it analyzes after a tenth changed), this never
// fires.
extension PostgresStore {
    /// The tables whose statistics the store keeps in step while they grow: of the outbox, its
    /// pending partition, which the hot statements read (a partitioned table has no statistics
    /// of its own to keep, and finished rows are read by the console only).
    static let analyzedTables = ["hub_delivery_pending", "hub_notification", "hub_endpoint"]

    /// Changed rows below which a table is never analyzed by the store.
    static let statisticsMinimumChanges = 1_000

    /// Analyzes each of ``analyzedTables`` whose rows changed since its last analysis reach both
    /// `minimumChanges` and the row count that analysis found (never analyzed: any count). Tables
    /// the role does not own (only their owner may analyze them) are left to autovacuum.
    /// - Returns: the tables it analyzed.
    @discardableResult
    func analyzeGrownTables(minimumChanges: Int = statisticsMinimumChanges) async throws -> [String] {
        let stale = try await rows(
            """
            SELECT t.name
            FROM unnest(\(Self.analyzedTables)::text[]) AS t(name)
            JOIN pg_stat_user_tables s ON s.relid = to_regclass(t.name)
            JOIN pg_class c ON c.oid = s.relid
            WHERE s.n_mod_since_analyze >= greatest(\(minimumChanges)::bigint, c.reltuples::bigint)
                AND pg_has_role(c.relowner, 'USAGE')
            ORDER BY t.name
            """
        ).map { try $0.decode(String.self) }
        for table in stale where Self.analyzedTables.contains(table) {
            try await rows(PostgresQuery(unsafeSQL: "ANALYZE \(table)"))
        }
        return stale
    }

    /// Runs ``analyzeGrownTables(minimumChanges:)`` every `interval` until cancelled. A failure is
    /// logged once per episode (the server may be restarting).
    func keepStatistics(every interval: Duration) async {
        var failing = false
        while (try? await configuration.clock.sleep(until: configuration.clock.now + interval, tolerance: nil)) != nil {
            do {
                let analyzed = try await analyzeGrownTables()
                if !analyzed.isEmpty {
                    logger.debug("analyzed grown tables", metadata: ["tables": "\(analyzed.joined(separator: ", "))"])
                }
                failing = false
            } catch {
                if !failing {
                    logger.debug("could not check the tables' statistics", metadata: ["error": "\(error)"])
                }
                failing = true
            }
        }
    }
}
