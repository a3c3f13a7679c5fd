import Foundation
import HubCore
import PostgresNIO
import Testing

@testable import HubPostgres
@testable import HubSQLite

/// A row as a store holds it, before it is named by its key.
struct StoredOutboxRow {
    var id: Int64
    var user: String
    var endpointId: String
    var kind: String
    /// The row with an empty key.
    var state: OutboxRowState
}

/// One store under the differential test: the store, how to read its rows, and which of its
/// row IDs carries which key.
final class DifferentialSide {
    let name: String
    let store: any Store
    let readRows: () async throws -> [StoredOutboxRow]
    /// When its sweep purges finished rows; the reference model follows the sides' rule.
    let retention: OutboxReference.Retention
    private var keys: [Int64: String] = [:]
    private var ids: [String: Int64] = [:]

    init(
        name: String, store: any Store, retention: OutboxReference.Retention = .whileNotificationLives,
        readRows: @escaping () async throws -> [StoredOutboxRow]
    ) {
        self.name = name
        self.store = store
        self.retention = retention
        self.readRows = readRows
    }

    static func sqlite() throws -> DifferentialSide {
        let store = try SQLiteStore.inMemory()
        return DifferentialSide(name: "SQLite", store: store) {
            try await store.outboxRecords().map { record in
                StoredOutboxRow(
                    id: record.id ?? 0, user: record.userId, endpointId: record.endpointId, kind: record.kind.rawValue,
                    state: OutboxRowState(
                        key: "", transport: record.transport.rawValue, notificationId: record.notificationId,
                        changeVersion: record.changeVersion, priority: record.priority.rawValue,
                        attempts: record.attempts, dueAt: OutboxClock.seconds(record.dueAt),
                        pending: record.state == .pending, result: record.result?.rawValue,
                        leaseOwner: record.leaseOwner, leaseUntil: record.leaseUntil.map(OutboxClock.seconds),
                        suspended: record.suspendedAt == nil ? nil : record.suspendedReason,
                        lastError: record.lastError, firstSentAt: record.firstSentAt.map(OutboxClock.seconds)))
            }
        }
    }

    /// `store` emptied (its schema migrated once, its tables and version sequence reset: faster
    /// than a new schema for every sequence).
    static func postgres(_ store: PostgresStore) async throws -> DifferentialSide {
        try await store.migrate()
        try await store.rows(
            "TRUNCATE hub_delivery, hub_notification, hub_endpoint RESTART IDENTITY")
        try await store.rows("ALTER SEQUENCE hub_change_version RESTART")
        return DifferentialSide(name: "PostgreSQL", store: store, retention: .expiryAtFinish) {
            try await store.rows(
                """
                SELECT id, user_id, endpoint_id, kind, transport, notification_id, change_version, priority, attempts,
                    due_at, state, result, lease_owner, lease_until, suspended_at, suspended_reason, last_error,
                    first_sent_at
                FROM hub_delivery ORDER BY id
                """
            ).map { row in
                let row = row.makeRandomAccess()
                let pending = try row.value("state", as: String.self) == "pending"
                let suspendedAt = try row.value("suspended_at", as: Date?.self)
                return StoredOutboxRow(
                    id: try row.value("id"), user: try row.value("user_id"), endpointId: try row.value("endpoint_id"),
                    kind: try row.value("kind"),
                    state: OutboxRowState(
                        key: "", transport: try row.value("transport"),
                        notificationId: try row.value("notification_id"),
                        changeVersion: try row.value("change_version"), priority: try row.value("priority"),
                        attempts: try row.value("attempts", as: Int.self),
                        dueAt: OutboxClock.seconds(try row.value("due_at")), pending: pending,
                        result: try row.value("result"), leaseOwner: try row.value("lease_owner"),
                        leaseUntil: try row.value("lease_until", as: Date?.self).map(OutboxClock.seconds),
                        suspended: suspendedAt == nil ? nil : try row.value("suspended_reason", as: String?.self),
                        lastError: try row.value("last_error"),
                        firstSentAt: try row.value("first_sent_at", as: Date?.self).map(OutboxClock.seconds)))
            }
        }
    }

    func id(_ key: String) -> Int64? { ids[key] }

    /// Applies `step` at `now`; returns what it returned, in the reference model's terms.
    func apply(_ step: OutboxDifferential.Step, at seconds: Int) async throws -> [String] {
        typealias D = OutboxDifferential
        let now = OutboxClock.at(seconds)
        switch step.action {
        case .register(let user, let endpoint, let transport):
            _ = try await store.upsertEndpoint(D.endpoint(user, endpoint, transport, at: now))
            return []
        case .deleteEndpoint(let user, let endpoint):
            return ["\(try await store.deleteEndpoint(FeedKey(appId: D.app, userId: user), id: endpoint))"]
        case .publish(let publish):
            let result = try await store.publish(D.request(publish, step: step, at: now))
            try await learnKeys(step)
            return ["created=\(result.created)"] + result.handedOff.map { keys[$0.delivery.id] ?? "?" }.sorted()
        case .publishBatch(let batch):
            let results = try await store.publish(batch: batch.map { D.request($0, step: step, at: now) })
            try await learnKeys(step)
            return results.map { "created=\($0.created)" }
                + results.flatMap(\.handedOff).map { keys[$0.delivery.id] ?? "?" }.sorted()
        case .delete(let user, let notification):
            let deleted = try await store.delete(
                FeedKey(appId: D.app, userId: user), appNotificationId: notification, at: now)
            return ["\(deleted != nil)"]
        case .updateState(let user, let notification, let dismiss, let except):
            let changed = try await store.updateState(D.stateChange(user, notification, dismiss, except, at: now))
            return ["\(changed != nil)"]
        case .claim(let lane, let owner, let limit):
            let claimed = try await store.claimDeliveries(
                lane.lane, limit: limit, now: now, owner: owner, leaseUntil: now.addingTimeInterval(Double(D.lease)))
            return claimed.map { keys[$0.delivery.id] ?? "?" }
        case .renew(let owner, let keys):
            try await store.renewLeases(
                keys.compactMap { ids[$0] }, owner: owner, until: now.addingTimeInterval(Double(2 * D.lease)))
            return []
        case .outcomes(let outcomes):
            try await store.recordOutcomes(
                outcomes.compactMap { outcome in
                    ids[outcome.key].map { OutboxOutcome(id: $0, D.change(outcome.kind, at: now), at: now) }
                })
            return []
        case .release(let owner):
            try await store.releaseLeases(owner: owner)
            return []
        case .resume:
            try await store.resumeSuspended(at: now)
            return []
        case .advance:
            return []
        case .sweep(let retention):
            _ = try await store.sweep(now: now, purgeBefore: now.addingTimeInterval(-Double(retention)))
            return []
        }
    }

    /// Names the rows `step` created: `tag:user:endpoint:kind` (a step creates at most one row
    /// per endpoint and kind).
    func learnKeys(_ step: OutboxDifferential.Step) async throws {
        for row in try await readRows() where keys[row.id] == nil {
            var key = "\(step.tag):\(row.user):\(row.endpointId):\(row.kind)"
            while ids[key] != nil { key += "+" }
            keys[row.id] = key
            ids[key] = row.id
        }
    }

    /// What the store shows after `step`, with `returned`.
    func observe(after step: OutboxDifferential.Step, returned: [String]) async throws -> OutboxObservation {
        try await learnKeys(step)
        var observation = OutboxObservation(returned: returned)
        let rows = try await readRows().map { row in
            var state = row.state
            state.key = keys[row.id] ?? "?"
            // A finished row's suspension is not observable (receipts show it for pending rows).
            if !state.pending { state.suspended = nil }
            return state
        }
        var feeds: [UserNotification] = []
        for user in OutboxDifferential.users {
            let key = FeedKey(appId: OutboxDifferential.app, userId: user)
            observation.endpoints += try await store.endpoints(key).map(OutboxObservation.describe)
            feeds += try await store.feed(key, after: 0, limit: 1_000).changes
        }
        observation.endpoints.sort()
        let ranked = OutboxObservation.ranked(rows: rows, feeds)
        observation.rows = ranked.rows.sorted()
        observation.feeds = ranked.feeds
        return observation
    }
}

extension OutboxDifferential {
    /// Where a sequence first went wrong.
    struct Failure: Error, CustomStringConvertible {
        /// The steps run, the failing one last.
        var steps: [Step]
        var differences: [String]
        var description: String {
            (["after \(steps.count) steps:"] + steps.map { "  \($0)" } + ["differences:"]
                + differences.map { "  \($0)" }).joined(separator: "\n")
        }
    }

    /// Runs `steps` on fresh stores made by `makeSides` and the reference model, comparing after
    /// every step. Steps the model does not admit (rows that a shrunk sequence no longer leases)
    /// are left out.
    /// - Returns: the first difference, or `nil`.
    static func run(_ steps: [Step], sides makeSides: () async throws -> [DifferentialSide]) async throws -> Failure? {
        let sides = try await makeSides()
        for side in sides { try await side.store.migrate() }
        var model = Model()
        let retentions = Set(sides.map(\.retention))
        precondition(retentions.count <= 1, "sides with different retention rules need runs of their own")
        model.reference.retention = retentions.first ?? .whileNotificationLives
        var ran: [Step] = []
        for step in steps {
            guard let step = model.admits(step) else { continue }
            ran.append(step)
            let seconds = model.now
            let returned = model.apply(step)
            let expected = model.reference.observation(returned: returned)
            for side in sides {
                let observed: OutboxObservation
                do {
                    observed = try await side.observe(after: step, returned: try await side.apply(step, at: seconds))
                } catch {
                    return Failure(steps: ran, differences: ["\(side.name) threw \(error)"])
                }
                let differences = observed.differences(from: expected, side.name, "model")
                if !differences.isEmpty { return Failure(steps: ran, differences: differences) }
            }
        }
        return nil
    }

    /// Drops steps from a failing sequence while it still fails (halves, then smaller chunks, then
    /// single steps), within `budget` runs.
    static func shrink(
        _ failure: Failure, budget: Int = 300, sides makeSides: () async throws -> [DifferentialSide]
    ) async throws -> Failure {
        var best = failure
        var runs = 0
        var chunk = max(1, best.steps.count / 2)
        while chunk >= 1 && runs < budget {
            var start = 0
            var removedAny = false
            while start < best.steps.count && runs < budget {
                var candidate = best.steps
                candidate.removeSubrange(start..<min(start + chunk, candidate.count))
                runs += 1
                if let smaller = try await run(candidate, sides: makeSides) {
                    best = smaller
                    removedAny = true
                } else {
                    start += chunk
                }
            }
            if !removedAny { chunk /= 2 }
        }
        return best
    }

    /// Runs `runs` sequences of `steps` steps (seeds `firstSeed…`), shrinking and recording the
    /// first that fails. `HUB_OUTBOX_SEED` replays one seed; `HUB_OUTBOX_RUNS` and
    /// `HUB_OUTBOX_STEPS` change the amount.
    static func check(
        runs: Int, steps: Int, firstSeed: UInt64 = 1, sides makeSides: () async throws -> [DifferentialSide]
    ) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seeds: [UInt64]
        if let seed = environment["HUB_OUTBOX_SEED"].flatMap(UInt64.init) {
            seeds = [seed]
        } else {
            let count = environment["HUB_OUTBOX_RUNS"].flatMap(Int.init) ?? runs
            seeds = (0..<UInt64(count)).map { firstSeed + $0 }
        }
        let length = environment["HUB_OUTBOX_STEPS"].flatMap(Int.init) ?? steps
        for seed in seeds {
            let sequence = generate(seed: seed, count: length)
            guard let failure = try await run(sequence, sides: makeSides) else { continue }
            let shrunk = try await shrink(failure, sides: makeSides)
            Issue.record(
                """
                The outbox differs from the reference model (seed \(seed), \(length) steps; replay with \
                HUB_OUTBOX_SEED=\(seed)). Shrunk from \(failure.steps.count) steps to \(shrunk.steps.count), \(shrunk)
                """)
            return
        }
    }
}
