public import Foundation
import GRDB
public import HubCore

// The delivery outbox: finishing, retrying, renewing and releasing leases (claiming is in
// SQLiteStore+Claim.swift, enqueueing in SQLiteStore+Enqueue.swift, statistics in
// SQLiteStore+OutboxStatistics.swift). The rules are OutboxMachine's; this file renders and applies them.
extension SQLiteStore {
    /// Extends `owner`'s leases of the deliveries `ids` to `until`, those
    /// ``OutboxMachine/renewableSQL(_:owner:)`` names (`+state`: looked up by ID, not by state).
    public func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws {
        guard !ids.isEmpty else { return }
        let idList = JSONText.array(ids.map(JSONText.number))
        try await write(.relaxed) { db in
            try db.cachedStatement(
                sql: """
                    UPDATE delivery SET leaseUntil = ?
                    WHERE id IN (SELECT value FROM json_each(?))
                        AND \(OutboxMachine.renewableSQL({ $0 == .state ? "+state" : $0.rawValue }, owner: "?"))
                    """
            ).execute(arguments: [until.canonical.storedSeconds, idList, owner])
        }
    }

    /// Records outcomes in one transaction: plain finishes (delivered, rejected, given up,
    /// superseded) with one statement; gone endpoints and put-backs row by row (they touch other
    /// rows). Unknown or already finished deliveries are left alone. What each outcome writes is
    /// ``OutboxMachine``'s (``OutboxMachine/columns(_:)``, ``OutboxMachine/putBack(kind:newerTapWaits:)``,
    /// ``OutboxMachine/deactivates(registeredAt:goneSince:claimedAt:at:)``).
    public func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        try await write(.relaxed) { db in try Self.recordOutcomes(db, outcomes) }
    }

    /// ``recordOutcomes(_:)`` in the transaction of `db`.
    static func recordOutcomes(_ db: Database, _ outcomes: [OutboxOutcome]) throws {
        // Own final answers first (``OutboxMachine/isRecordedFirst(_:)``), in one statement per ending.
        var plain: [PlainFinish] = []
        var plainAt = Date.distantPast
        for outcome in outcomes where OutboxMachine.isRecordedFirst(outcome.change) {
            guard case .finish(let result, let detail, _) = outcome.change else { continue }
            plain.append(
                PlainFinish(id: outcome.id, result: result, detail: detail, messageId: outcome.providerMessageId))
            plainAt = max(plainAt, outcome.at)
        }
        try Self.finishPlain(db, plain, at: plainAt.canonical)
        for outcome in outcomes where !OutboxMachine.isRecordedFirst(outcome.change) {
            guard let record = try pending(db, id: outcome.id) else { continue }
            let at = outcome.at.canonical
            let messageId = outcome.providerMessageId
            switch outcome.change {
            case .finish(_, let detail, let goneSince):
                try Self.finishGone(
                    db, record, detail: detail, goneSince: goneSince, at: at, providerMessageId: messageId)
            case .retry(let dueAt, let error):
                try putBack(
                    db, record, .retried,
                    OutboxMachine.GivenValues(at: at, dueAt: dueAt, error: error, messageId: messageId))
            case .suspend(let reason):
                try putBack(
                    db, record, .suspended, OutboxMachine.GivenValues(at: at, error: reason, messageId: messageId))
            case .release(let dueAt):
                try putBack(db, record, .released, OutboxMachine.GivenValues(at: at, dueAt: dueAt))
            }
        }
    }

    /// A finish other than `endpointGone`, as ``finishPlain(_:_:at:as:)`` writes it.
    struct PlainFinish {
        var id: Int64
        var result: DeliveryResult
        var detail: String?
        var messageId: String?
    }

    /// Finishes pending deliveries with their results: one statement per distinct result and
    /// detail (a batch of deliveries is mostly `delivered` without detail), each selecting its
    /// rows by ID from `[id, providerMessageId]` pairs (`UPDATE … FROM json_each(?)`, rowid
    /// look-ups). `write`: ``OutboxMachine/RowWrite/answered`` (the send noted for the receipt)
    /// or ``OutboxMachine/RowWrite/closed``.
    static func finishPlain(
        _ db: Database, _ rows: [PlainFinish], at now: Date, as write: OutboxMachine.RowWrite = .answered
    ) throws {
        struct Ending: Hashable {
            var result: DeliveryResult
            var detail: String?
        }
        let groups = Dictionary(grouping: rows) { Ending(result: $0.result, detail: $0.detail) }
        for (ending, members) in groups {
            try db.cachedStatement(sql: write == .closed ? Self.closeRows : Self.answerRows).execute(arguments: [
                ending.result.rawValue, ending.detail, now.storedSeconds,
                JSONText.array(
                    members.map {
                        JSONText.array([JSONText.number($0.id), $0.messageId.map(JSONText.string) ?? "null"])
                    }),
            ])
        }
    }

    /// ``finishPlain(_:_:at:as:)``'s statement for `write`: the result, detail and time bound as
    /// `?1`…`?3`, the rows as a JSON array `?4` of `[id, providerMessageId]`.
    private static func finishRowsSQL(_ write: OutboxMachine.RowWrite) -> String {
        let set = OutboxMachine.setList(
            write, target: \.rawValue, current: { "delivery.\($0.rawValue)" },
            given: { given in
                switch given {
                case .result: "?1"
                case .detail: "?2"
                case .at: "?3"
                case .messageId: "json_extract(finished.value, '$[1]')"
                case .dueAt, .error: "NULL"
                }
            }, greatest: "MAX")
        return """
            UPDATE delivery SET \(set)
            FROM json_each(?4) AS finished
            WHERE delivery.id = json_extract(finished.value, '$[0]') AND +delivery.state = 'pending'
            """
    }
    private static let answerRows = finishRowsSQL(.answered)
    private static let closeRows = finishRowsSQL(.closed)

    /// The delivery `id` while it is pending; `nil` when it is gone or already finished (an
    /// outcome recorded twice is recorded once).
    static func pending(_ db: Database, id: Int64) throws -> DeliveryRecord? {
        guard
            let record = try DeliveryRecord.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM delivery WHERE id = ?"), arguments: [id]),
            record.state == .pending
        else { return nil }
        return record
    }

    /// `write` (``OutboxMachine/setList(_:target:current:given:greatest:)``) of the pending row `?7`,
    /// the given values bound as `?1`…`?6` in the order of ``OutboxMachine/Given``.
    static func writeSQL(_ write: OutboxMachine.RowWrite) -> String {
        writeStatements[write] ?? renderWrite(write)
    }

    private static func renderWrite(_ write: OutboxMachine.RowWrite) -> String {
        let set = OutboxMachine.setList(
            write, target: \.rawValue, current: \.rawValue,
            given: { "?\(OutboxMachine.Given.allCases.firstIndex(of: $0)! + 1)" }, greatest: "MAX")
        return "UPDATE delivery SET \(set) WHERE id = ?7 AND state = 'pending'"
    }

    /// ``writeSQL(_:)`` of the writes a put-back makes, rendered once.
    private static let writeStatements = Dictionary(
        uniqueKeysWithValues: [
            OutboxMachine.RowWrite.answered, .retried, .suspended, .released, .supersededByNewerTap(sent: true),
            .supersededByNewerTap(sent: false),
        ].map { ($0, renderWrite($0)) })

    /// Applies `write` to the pending row `id` (one statement).
    static func apply(
        _ write: OutboxMachine.RowWrite, to id: Int64, _ given: OutboxMachine.GivenValues, _ db: Database
    ) throws {
        try db.cachedStatement(sql: writeSQL(write)).execute(arguments: given.arguments(id: id))
    }

    /// Finishes a delivery as `endpointGone` and deactivates its endpoint (see ``recordOutcomes(_:)``).
    static func finishGone(
        _ db: Database, _ record: DeliveryRecord, detail: String?, goneSince: Date?, at now: Date,
        providerMessageId: String?
    ) throws {
        try apply(
            .answered, to: record.id ?? 0,
            OutboxMachine.GivenValues(result: .endpointGone, detail: detail, at: now, messageId: providerMessageId), db)
        let key = FeedKey(appId: record.appId, userId: record.userId)
        guard var endpoint = try fetchEndpoint(db, key, id: record.endpointId), endpoint.state == .active else {
            return
        }
        guard
            OutboxMachine.deactivates(
                registeredAt: endpoint.registeredAt, goneSince: goneSince, claimedAt: record.claimedAt, at: now)
        else { return }
        endpoint.state = .inactive
        endpoint.inactiveReason = detail
        endpoint.inactiveSince = OutboxMachine.inactiveSince(goneSince: goneSince, at: now).canonical
        try EndpointRecord(endpoint).update(db)
        let superseded = OutboxMachine.supersededByGoneEndpoint
        try finishPendingDeliveries(db, of: endpoint, result: superseded.result, detail: superseded.detail, at: now)
    }

    /// Puts a claimed row back as ``OutboxMachine/putBack(kind:newerTapWaits:)`` decides: it
    /// waits again as `write` says (``OutboxMachine/waitingAgain(_:)``), or, a tap whose endpoint
    /// has a newer waiting tap, is finished as superseded and passes on to that tap
    /// (``OutboxMachine/supersede(_:into:)``).
    static func putBack(
        _ db: Database, _ record: DeliveryRecord, _ write: OutboxMachine.RowWrite, _ given: OutboxMachine.GivenValues
    ) throws {
        let waiting = record.kind == .shoulderTap ? try pendingTap(db, endpointOf: record) : nil
        let newer = waiting.flatMap { $0.id != record.id ? $0 : nil }
        let decision = OutboxMachine.putBack(kind: record.kind, newerTapWaits: newer != nil)
        if decision == .supersedes, var newer {
            newer.tap = OutboxMachine.supersede(record.tap, into: newer.tap)
            try newer.update(db)
        }
        let (write, given) = OutboxMachine.putBackWrite(write, given, decision)
        try apply(write, to: record.id ?? 0, given, db)
    }

    /// Un-parks every suspended delivery, due at once (see ``OutboxStore/resumeSuspended(at:)``).
    @discardableResult
    public func resumeSuspended(at now: Date) async throws -> Int {
        try await write(.relaxed) { db in
            try db.cachedStatement(
                sql: """
                    UPDATE delivery SET \(Self.mergeSQL(OutboxMachine.resume) { _ in "?1" })
                    WHERE state = 'pending' AND suspendedAt IS NOT NULL
                    """
            ).execute(arguments: [now.canonical.storedSeconds])
            return db.changesCount
        }
    }

    /// The pending rows leased to `?`.
    static let leasedByOwnerSQL = """
        SELECT * FROM delivery INDEXED BY delivery_lane
        WHERE state = 'pending' AND suspendedAt IS NULL AND leaseOwner = ?
        """

    /// Puts back the deliveries `owner` had claimed when it stopped without finishing them (a
    /// crash), so a restarted instance of the same name sends them at once instead of waiting for
    /// the leases to expire: each like a retry that keeps its due time and last error
    /// (``OutboxMachine/RowWrite/retried``). A released tap whose endpoint has a newer pending
    /// tap is superseded.
    public func releaseLeases(owner: String) async throws {
        try await write(.relaxed) { db in
            // A leased row is never suspended (a suspension ends the lease), so the lanes' index has it.
            // In the order they were created (``OutboxMachine/supersedingMerge``), sorted here so
            // that the statement keeps to the lanes' index.
            let leased = try DeliveryRecord.fetchAll(db, sql: Self.leasedByOwnerSQL, arguments: [owner])
                .sorted { ($0.id ?? 0) < ($1.id ?? 0) }
            let now = Date().canonical
            for record in leased {
                try Self.putBack(db, record, .retried, OutboxMachine.GivenValues(at: now))
            }
        }
    }
}

extension OutboxMachine.GivenValues {
    /// The arguments of ``SQLiteStore/writeSQL(_:)`` for the row `id`: the given values as `?1`…`?6`
    /// (in the order of ``OutboxMachine/Given``), `id` as `?7`.
    func arguments(id: Int64) -> StatementArguments {
        [result?.rawValue, detail, at.canonical.storedSeconds, dueAt?.canonical.storedSeconds, error, messageId, id]
    }
}
