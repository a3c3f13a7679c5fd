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
