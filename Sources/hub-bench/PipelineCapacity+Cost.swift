import Foundation

// The server's counters at a moment and what they cost per 1,000 deliveries (read by
// `ServerProbe` in PipelineCapacity.swift).

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
