import Foundation
import GRDB
import HubCore

// The multi-row upsert that writes delivery plans (``SQLiteStore/write(_:_:)`` in
// SQLiteStore+Enqueue.swift decides what it writes and matches the returned IDs back).

extension SQLiteStore {
    /// A row of a batch's upsert, as its returned ID is matched back.
    struct RowKey: Hashable {
        var userId: String
        var endpointId: String
        var kind: DeliveryKind
    }

    /// Writes the rows `parts` select of their plans (all of one time and hand-off), in that
    /// order, in multi-row `VALUES` statements of ``upsertChunks`` rows each (largest first): those
    /// a plan's `leasing` marks are inserted leased to `handOff`'s owner as a claim at `now` would
    /// lease them; the others are inserted waiting, each tap merging into its endpoint's waiting
    /// tap (a leased row is outside the index the conflict is found by, so it never merges).
    ///
    /// Each row's values are bound as parameters (its due time keeps every bit) through SQLite's
    /// C API (``RawStatement``): the writer thread is what limits publishes to many endpoints,
    /// and building JSON for `json_each` cost it a third more per row than binding, and GRDB's
    /// `StatementArguments` twice as much again.
    /// - Returns: a returned row per row written: its ID, user, endpoint and kind, and whether it
    ///   is leased.
    static func upsert(
        _ parts: [(plan: PreparedPlan, rows: Range<Int>)], now: Date, handOff: HandOff?, _ db: Database
    ) throws -> [(key: RowKey, id: Int64, leased: Bool)] {
        let total = parts.reduce(0) { $0 + $1.rows.count }
        guard total > 0 else { return [] }
        let appId = parts[0].plan.notification.appId
        let createdAt = now.canonical.storedSeconds
        let owner = handOff?.owner
        let leaseUntil = handOff?.leaseUntil.canonical.storedSeconds
        var returned: [(key: RowKey, id: Int64, leased: Bool)] = []
        returned.reserveCapacity(total)
        var remaining = total
        // The statement being bound, its rows and how many of them are bound.
        var statement: (raw: RawStatement, rows: Int)?
        var row = 0
        for (plan, range) in parts {
            let n = plan.notification
            for r in range {
                if statement == nil {
                    let chunk = upsertChunks.first { $0 <= remaining }!
                    let raw = try RawStatement(db.cachedStatement(sql: upsertSQL[chunk]!))
                    raw.bind(appId, at: 1)
                    raw.bind(createdAt, at: 2)
                    raw.bind(Int64(OutboxMachine.attempts(afterLease: 0)), at: 3)
                    raw.bind(owner, at: 4)
                    raw.bind(leaseUntil, at: 5)
                    statement = (raw, chunk)
                    remaining -= chunk
                    row = 0
                }
                let (raw, rows) = statement!
                let planned = plan.rows[r]
                let first = Int32(upsertCommonParameters + row * upsertRowParameters + 1)
                raw.bind(n.userId, at: first)
                raw.bind(planned.endpointId, at: first + 1)
                raw.bind(planned.transport.rawValue, at: first + 2)
                raw.bind(planned.kind.rawValue, at: first + 3)
                raw.bind(n.id, at: first + 4)
                raw.bind(n.changeVersion, at: first + 5)
                raw.bind(n.priority.rawValue, at: first + 6)
                raw.bind(Int64(n.priority.urgency), at: first + 7)
                raw.bind(Int64(plan.leasing[r] ? 1 : 0), at: first + 8)
                raw.bind(planned.dueAt.canonical.storedSeconds, at: first + 9)
                row += 1
                guard row == rows else { continue }
                try raw.run { raw in
                    returned.append(
                        (
                            RowKey(
                                userId: raw.string(1), endpointId: raw.string(2),
                                kind: DeliveryKind(rawValue: raw.string(3))),
                            raw.int64(0), raw.int64(4) != 0
                        ))
                }
                statement = nil
            }
        }
        return returned
    }

    /// The rows of one upsert statement: a write takes the largest that fit, so 100 rows are 3
    /// statements and each size's statement is prepared once.
    private static let upsertChunks = [128, 64, 32, 16, 8, 4, 2, 1]

    /// The parameters of one row of ``upsertSQL``, and those all rows share before them.
    private static let upsertRowParameters = 10
    private static let upsertCommonParameters = 5

    /// The upsert of `n` rows by `n`: the app, the time, the leased attempts, the lease's owner and
    /// end are `?1`…`?5`; each row binds its user, endpoint, transport, kind, notification, change
    /// version, priority, urgency, whether it is leased and its due time.
    private static let upsertSQL: [Int: String] = Dictionary(
        uniqueKeysWithValues: upsertChunks.map { n in
            let rows = (0..<n).map { r in
                let p = (1...upsertRowParameters).map { "?\(upsertCommonParameters + r * upsertRowParameters + $0)" }
                return """
                    (?1, \(p[0]), \(p[1]), \(p[2]), \(p[3]), \(p[4]), \(p[5]), \(p[6]), \(p[7]), 'pending', \
                    CASE WHEN \(p[8]) THEN ?3 ELSE 0 END, ?2, \(p[9]), CASE WHEN \(p[8]) THEN ?4 END, \
                    CASE WHEN \(p[8]) THEN ?5 END, CASE WHEN \(p[8]) THEN ?2 END)
                    """
            }
            return (
                n,
                """
                INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                    priority, urgency, state, attempts, createdAt, dueAt, leaseOwner, leaseUntil, claimedAt)
                VALUES \(rows.joined(separator: ",\n"))
                ON CONFLICT (appId, userId, endpointId) WHERE \(waitingTapSQL)
                DO UPDATE SET \(tapMergeSQL)
                RETURNING id, userId, endpointId, kind, leaseOwner IS NOT NULL
                """
            )
        })
}
