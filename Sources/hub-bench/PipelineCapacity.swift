import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// What the PostgreSQL server does per delivery in `hub-bench pipeline --store postgres`: the
/// statements the hubs ran (`pg_stat_statements`; each is one round trip, as postgres-nio waits
/// for a statement's answer before it sends the next), transactions (`pg_stat_database`), WAL
/// (`pg_stat_wal`, and by resource manager from `pg_walinspect`), rows written
/// (`pg_stat_user_tables`) and the server's CPU time (utime + stime from `/proc` of the postmaster,
/// its live processes and the ones it has reaped). Each part that the server cannot give
/// (an extension missing, a server on another machine) is left out with the reason.
///
/// The extensions are created in a schema of their own, `hub_bench`, of the bench's throw-away
/// database, so that nothing is left behind and the hubs' `public` schema is untouched.
final class ServerProbe: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// The database's OID (`pg_stat_statements` keeps every database's statements).
    let databaseOID: Int64
    /// Why there are no statement counts, or nil when there are.
    let statementsMissing: String?
    /// Why there is no WAL by resource manager, or nil when there is.
    let walInspectMissing: String?
    /// The postmaster's process ID on this machine, or nil (see ``cpuMissing``).
    let postmaster: Int32?
    let cpuMissing: String?

    /// Seconds the closing snapshot waits so that the server's statistics include the phase: a
    /// PostgreSQL 15 backend reports its table, transaction and WAL counters at most once a
    /// second while busy, and an idle one within 10 s (`PGSTAT_IDLE_INTERVAL`).
    static let statisticsDelay = Duration.seconds(11)

    private init(
        connection: PostgresConnection, logger: Logger, databaseOID: Int64, statementsMissing: String?,
        walInspectMissing: String?, postmaster: Int32?, cpuMissing: String?
    ) {
        self.connection = connection
        self.logger = logger
        self.databaseOID = databaseOID
        self.statementsMissing = statementsMissing
        self.walInspectMissing = walInspectMissing
        self.postmaster = postmaster
        self.cpuMissing = cpuMissing
    }

    /// Connects to `database` and sets up what the server allows.
    static func open(_ database: ThrowawayDatabase) async throws -> ServerProbe {
        var logger = Logger(label: "bench.pipeline.probe")
        logger.logLevel = .error
        let connection = try await PostgresConnection.connect(
            configuration: database.ownConfiguration, id: 2, logger: logger)
        func attempt(_ sql: String) async -> String? {
            do {
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
                return nil
            } catch let error as PSQLError {
                return error.serverInfo?[.message] ?? String(reflecting: error)
            } catch {
                return String(reflecting: error)
            }
        }
        _ = await attempt("/* hub-bench probe */ CREATE SCHEMA IF NOT EXISTS hub_bench")
        var statementsMissing = await attempt(
            "/* hub-bench probe */ CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA hub_bench")
        if statementsMissing == nil {
            // The view fails unless the library is in shared_preload_libraries.
            statementsMissing = await attempt("/* hub-bench probe */ SELECT count(*) FROM hub_bench.pg_stat_statements")
        }
        let walInspectMissing = await attempt(
            "/* hub-bench probe */ CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA hub_bench")
        var databaseOID: Int64 = 0
        var backend: Int32 = 0
        for try await (oid, pid) in try await connection.query(
            "/* hub-bench probe */ SELECT oid::bigint, pg_backend_pid() FROM pg_database WHERE datname = current_database()",
            logger: logger
        ).decode((Int64, Int32).self) {
            databaseOID = oid
            backend = pid
        }
        let (postmaster, cpuMissing) = Self.postmaster(ofBackend: backend)
        return ServerProbe(
            connection: connection, logger: logger, databaseOID: databaseOID,
            statementsMissing: statementsMissing.map {
                "pg_stat_statements: \($0) (scripts/with-postgres loads it when the server has it)"
            },
            walInspectMissing: walInspectMissing, postmaster: postmaster, cpuMissing: cpuMissing)
    }

    /// The parent of this probe's backend, if it is a PostgreSQL process on this machine.
    private static func postmaster(ofBackend backend: Int32) -> (Int32?, String?) {
        guard let stat = ProcessStat(pid: backend) else {
            return (nil, "the server's processes are not on this machine (no /proc/\(backend))")
        }
        guard let parent = ProcessStat(pid: stat.parent), parent.command.hasPrefix("postgres") else {
            return (nil, "the parent of backend \(backend) is not a PostgreSQL server")
        }
        return (stat.parent, nil)
    }

    func close() async {
        try? await connection.close()
    }

    /// The server's counters now.
    func snapshot() async throws -> ServerSnapshot {
        var snapshot = ServerSnapshot()
        snapshot.cpuSeconds = postmaster.flatMap(Self.serverCPU(postmaster:))
        if statementsMissing == nil {
            for try await (id, calls, milliseconds, wal, text) in try await connection.query(
                """
                /* hub-bench probe */ SELECT queryid, calls, total_plan_time + total_exec_time, wal_bytes::bigint, query
                FROM hub_bench.pg_stat_statements WHERE dbid = \(databaseOID) AND toplevel
                """, logger: logger
            ).decode((Int64, Int64, Double, Int64, String).self) where !text.contains("hub-bench probe") {
                var statement =
                    snapshot.statements[id]
                    ?? ServerSnapshot.Statement(calls: 0, milliseconds: 0, walBytes: 0, text: text)
                statement.calls += calls
                statement.milliseconds += milliseconds
                statement.walBytes += wal
                snapshot.statements[id] = statement
            }
        }
        for try await (commits, rollbacks) in try await connection.query(
            "/* hub-bench probe */ SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datid = \(databaseOID)",
            logger: logger
        ).decode((Int64, Int64).self) {
            snapshot.transactions = commits + rollbacks
        }
        for try await (records, fpi, bytes, lsn) in try await connection.query(
            """
            /* hub-bench probe */ SELECT wal_records, wal_fpi, wal_bytes::bigint, pg_current_wal_lsn()::text
            FROM pg_stat_wal
            """, logger: logger
        ).decode((Int64, Int64, Int64, String).self) {
            snapshot.wal = ServerSnapshot.WAL(records: records, fullPageImages: fpi, bytes: bytes)
            snapshot.lsn = lsn
        }
        for try await (table, inserted, updated, hot, deleted) in try await connection.query(
            """
            /* hub-bench probe */ SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
            FROM pg_stat_user_tables WHERE schemaname = 'public'
            """, logger: logger
        ).decode((String, Int64, Int64, Int64, Int64).self) {
            snapshot.rows[table] = ServerSnapshot.Rows(inserted: inserted, updated: updated, hot: hot, deleted: deleted)
        }
        return snapshot
    }

    /// WAL written from `start` to `end` (LSNs) by resource manager (Heap, Btree, Transaction…),
    /// in bytes with full-page images; nil with the reason when `pg_walinspect` cannot say.
    func walByKind(from start: String, to end: String) async -> (kinds: [(String, Int64)], missing: String?) {
        if let walInspectMissing { return ([], "pg_walinspect: \(walInspectMissing)") }
        do {
            var kinds: [(String, Int64)] = []
            for try await (kind, bytes) in try await connection.query(
                """
                /* hub-bench probe */ SELECT s.kind, s.combined_size
                FROM hub_bench.pg_get_wal_stats(\(start)::pg_lsn, \(end)::pg_lsn, false)
                    AS s(kind, count, count_share, record_size, record_share, fpi_size, fpi_share, combined_size,
                        combined_share)
                WHERE s.count > 0 ORDER BY s.combined_size DESC
                """, logger: logger
            ).decode((String, Int64).self) {
                kinds.append((kind, bytes))
            }
            return (kinds, nil)
        } catch let error as PSQLError {
            return ([], "pg_walinspect: \(error.serverInfo?[.message] ?? String(reflecting: error))")
        } catch {
            return ([], "pg_walinspect: \(error)")
        }
    }

    /// CPU seconds of the postmaster, of its processes that ran and were reaped, and of those
    /// running now: a delta over a phase is the server's CPU for it.
    static func serverCPU(postmaster: Int32) -> Double? {
        guard let server = ProcessStat(pid: postmaster) else { return nil }
        var ticks = server.userTicks + server.systemTicks + server.reapedChildrenTicks
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let stat = ProcessStat(pid: pid), stat.parent == postmaster else { continue }
            ticks += stat.userTicks + stat.systemTicks
        }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// The fields of `/proc/PID/stat` the probe reads.
struct ProcessStat {
    var command: String
    var parent: Int32
    var userTicks: Double
    var systemTicks: Double
    /// `cutime` + `cstime`: the children this process has waited for.
    var reapedChildrenTicks: Double

    init?(pid: Int32) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        command = String(stat[stat.index(after: open)..<close])
        // After "pid (comm)": state is field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]), let user = Double(fields[11]),
            let system = Double(fields[12]), let childUser = Double(fields[13]), let childSystem = Double(fields[14])
        else { return nil }
        self.parent = parent
        userTicks = user
        systemTicks = system
        reapedChildrenTicks = childUser + childSystem
    }
}

/// The server's counters at one moment (see ``ServerProbe``).
struct ServerSnapshot: Sendable {
    struct Statement: Sendable {
        var calls: Int64
        /// Time spent executing it and, with `pg_stat_statements.track_planning` on, planning it
        /// (`total_exec_time` + `total_plan_time`; not the protocol or the commit).
        var milliseconds: Double
        var walBytes: Int64
        var text: String
    }
    struct WAL: Sendable {
        var records: Int64 = 0
        var fullPageImages: Int64 = 0
        var bytes: Int64 = 0
    }
    struct Rows: Sendable {
        var inserted: Int64 = 0
        var updated: Int64 = 0
        /// Updates that wrote no index entry (heap-only tuples).
        var hot: Int64 = 0
        var deleted: Int64 = 0
        var written: Int64 { inserted + updated + deleted }
    }

    /// By `queryid`; empty without `pg_stat_statements`.
    var statements: [Int64: Statement] = [:]
    var transactions: Int64 = 0
    var wal = WAL()
    var lsn = ""
    /// By table of the `public` schema.
    var rows: [String: Rows] = [:]
    var cpuSeconds: Double?
}

/// What the server did between two snapshots, per 1,000 deliveries, as lines to print.
struct ServerCost {
    var deliveries: Int
    /// The hubs' `hub_postgres_round_trips_total` over the phase (every statement they sent).
    var roundTrips: Int64?
    var statements: [(text: String, calls: Int64, milliseconds: Double, walBytes: Int64)] = []
    var statementCount: Int64 = 0
    var transactions: Int64 = 0
    var wal = ServerSnapshot.WAL()
    var walKinds: [(String, Int64)] = []
    var walKindsMissing: String?
    var rows: [(table: String, rows: ServerSnapshot.Rows)] = []
    var cpuSeconds: Double?

    init(
        from start: ServerSnapshot, to end: ServerSnapshot, deliveries: Int, walKinds: [(String, Int64)],
        walKindsMissing: String?
    ) {
        self.deliveries = deliveries
        for (id, statement) in end.statements {
            let before = start.statements[id]
            let calls = statement.calls - (before?.calls ?? 0)
            guard calls > 0 else { continue }
            statements.append(
                (
                    statement.text, calls, statement.milliseconds - (before?.milliseconds ?? 0),
                    statement.walBytes - (before?.walBytes ?? 0)
                ))
        }
        statements.sort { $0.calls > $1.calls || ($0.calls == $1.calls && $0.text < $1.text) }
        statementCount = statements.reduce(0) { $0 + $1.calls }
        transactions = end.transactions - start.transactions
        wal = ServerSnapshot.WAL(
            records: end.wal.records - start.wal.records,
            fullPageImages: end.wal.fullPageImages - start.wal.fullPageImages,
            bytes: end.wal.bytes - start.wal.bytes)
        self.walKinds = walKinds
        self.walKindsMissing = walKindsMissing
        for (table, after) in end.rows {
            let before = start.rows[table] ?? ServerSnapshot.Rows()
            let delta = ServerSnapshot.Rows(
                inserted: after.inserted - before.inserted, updated: after.updated - before.updated,
                hot: after.hot - before.hot, deleted: after.deleted - before.deleted)
            if delta.written > 0 { rows.append((table, delta)) }
        }
        rows.sort { $0.rows.written > $1.rows.written || ($0.rows.written == $1.rows.written && $0.table < $1.table) }
        if let before = start.cpuSeconds, let after = end.cpuSeconds { cpuSeconds = after - before }
    }

    /// `value` per 1,000 deliveries.
    func perThousand(_ value: Double) -> Double { deliveries > 0 ? value * 1000 / Double(deliveries) : .nan }
    func perThousand(_ value: Int64) -> Double { perThousand(Double(value)) }

    var rowsWritten: Int64 { rows.reduce(0) { $0 + $1.rows.written } }
    var cpuPerThousand: Double { cpuSeconds.map { perThousand($0) } ?? .nan }

    /// The lines `hub-bench pipeline` prints; `hubCPU`: the hubs' CPU-s per 1,000 deliveries.
    func lines(statementsMissing: String?, cpuMissing: String?, hubCPU: Double) -> [String] {
        var lines: [String] = []
        lines.append(
            String(
                format:
                    "  round trips: %@ (the hubs' hub_postgres_round_trips_total: every statement, BEGIN and COMMIT "
                    + "too), %.1f transactions (pg_stat_database)",
                roundTrips.map { String(format: "%.1f", perThousand($0)) } ?? "n/a", perThousand(transactions)))
        if let statementsMissing {
            lines.append("  statements: n/a (\(statementsMissing))")
        } else {
            lines.append(
                String(
                    format: "  statements: %.1f (pg_stat_statements, which counts a prepared BEGIN or COMMIT only "
                        + "once per connection); by statement — runs, ms executing (and planning, with "
                        + "pg_stat_statements.track_planning on), KB of WAL:",
                    perThousand(statementCount)))
            let shown = statements.prefix(Self.statementLines)
            for statement in shown {
                lines.append(
                    String(
                        format: "    %7.1f %7.1f %8.1f  %@", perThousand(statement.calls),
                        perThousand(statement.milliseconds), perThousand(statement.walBytes) / 1024,
                        Self.label(statement.text)))
            }
            let rest = statements.dropFirst(shown.count)
            if !rest.isEmpty {
                lines.append(
                    String(
                        format: "    %7.1f %7.1f %8.1f  (%d other statements)",
                        perThousand(rest.reduce(0) { $0 + $1.calls }),
                        perThousand(rest.reduce(0) { $0 + $1.milliseconds }),
                        perThousand(rest.reduce(0) { $0 + $1.walBytes }) / 1024, rest.count))
            }
        }
        lines.append(
            String(
                format: "  WAL: %.1f KB (pg_stat_wal: %.0f records, %.1f full-page images)%@",
                perThousand(wal.bytes) / 1024, perThousand(wal.records), perThousand(wal.fullPageImages),
                walKinds.isEmpty
                    ? walKindsMissing.map { "; by kind n/a (\($0))" } ?? ""
                    : "; by kind (pg_walinspect, with full-page images): "
                        + walKinds.prefix(6).map { String(format: "%@ %.1f KB", $0.0, perThousand($0.1) / 1024) }
                        .joined(separator: ", ")))
        lines.append(
            String(format: "  rows written: %.0f (pg_stat_user_tables) — ", perThousand(rowsWritten))
                + rows.map { entry in
                    let parts = [
                        entry.rows.inserted > 0
                            ? String(format: "%.0f inserted", perThousand(entry.rows.inserted)) : nil,
                        entry.rows.updated > 0
                            ? String(
                                format: "%.0f updated (%.0f HOT)", perThousand(entry.rows.updated),
                                perThousand(entry.rows.hot)) : nil,
                        entry.rows.deleted > 0 ? String(format: "%.0f deleted", perThousand(entry.rows.deleted)) : nil,
                    ].compactMap { $0 }
                    return "\(entry.table) " + parts.joined(separator: ", ")
                }.joined(separator: "; "))
        if let cpuSeconds {
            let perCore = cpuPerThousand > 0 ? 1000 / cpuPerThousand : .nan
            lines.append(
                String(
                    format: "  server CPU: %.3f CPU-s (postmaster and its processes, /proc; %.1f CPU-s in all) → "
                        + "%.0f deliveries/s per PostgreSQL core at this cost; the hubs used %.3f → %.2f hub cores "
                        + "per PostgreSQL core",
                    cpuPerThousand, cpuSeconds, perCore, hubCPU, hubCPU / cpuPerThousand))
        } else {
            lines.append("  server CPU: n/a (\(cpuMissing ?? "unknown"))")
        }
        return lines
    }

    /// Statements listed one a line; the others are summed in one more.
    static let statementLines = 14

    /// A statement's text, shortened to what tells it apart, on one line: a statement with common
    /// table expressions by their names (`WITH input, saved, … ⟶ SELECT …`), then its first 72
    /// characters.
    static func label(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        var shown = flat
        if flat.hasPrefix("WITH ") {
            let names = flat.matches(of: /(?:^WITH|\),) ([a-z_]+) AS (?:MATERIALIZED )?\(/).map { String($0.output.1) }
            if !names.isEmpty { shown = "WITH " + names.joined(separator: ", ") + " ⟶ " + Self.mainPart(of: flat) }
        }
        return shown.count <= 72 ? shown : String(shown.prefix(71)) + "…"
    }

    /// The statement after a `WITH` list: what follows the first common table expression's
    /// closing parenthesis that no comma follows.
    private static func mainPart(of flat: String) -> String {
        var depth = 0
        for index in flat.indices {
            switch flat[index] {
            case "(": depth += 1
            case ")":
                depth -= 1
                let rest = flat[flat.index(after: index)...].drop { $0 == " " }
                if depth == 0 && !rest.hasPrefix(",") { return String(rest) }
            default: break
            }
        }
        return ""
    }
}
