import Foundation
import HubCore

/// One row of an outbox as the differential test compares it: what a store's observable
/// behaviour depends on (claims, hand-offs, receipts, statistics). Rows are named by `key`, not
/// by the store's ID (stores number their rows differently): the step that created the row, its
/// user, endpoint and kind.
struct OutboxRowState: Hashable, Comparable, CustomStringConvertible {
    var key: String
    var transport: String
    var notificationId: String?
    var changeVersion: Int64
    var priority: String
    var attempts: Int
    /// Seconds after the test's start.
    var dueAt: Int
    var pending: Bool
    var result: String?
    var leaseOwner: String?
    var leaseUntil: Int?
    /// A pending row's suspension reason (`nil`: not suspended).
    var suspended: String?
    var lastError: String?
    /// When the first send an outcome spoke of was claimed (the receipt's first send).
    var firstSentAt: Int?

    static func < (a: Self, b: Self) -> Bool { a.key < b.key }

    var description: String {
        var text = "\(key) \(pending ? "pending" : "finished:\(result ?? "-")") via \(transport)"
        text += " n=\(notificationId ?? "-")@v\(changeVersion) \(priority) attempts=\(attempts) due=+\(dueAt)"
        if let leaseOwner { text += " lease=\(leaseOwner)→+\(leaseUntil.map(String.init) ?? "-")" }
        if let suspended { text += " suspended(\(suspended))" }
        if let lastError { text += " lastError=\(lastError)" }
        if let firstSentAt { text += " firstSent=+\(firstSentAt)" }
        return text
    }
}

/// What a store shows after a step: its outbox, the users' endpoints and feeds, and what the step
/// returned.
struct OutboxObservation: Hashable {
    var rows: [OutboxRowState] = []
    /// `user/id transport state inactiveSince`, by user and ID.
    var endpoints: [String] = []
    /// `user/appNotificationId id v… status read action`, by user and version.
    var feeds: [String] = []
    /// What the step returned (claimed keys in claim order, handed-off keys, …).
    var returned: [String] = []

    /// The differences from `other`, one per line; empty when equal.
    func differences(from other: OutboxObservation, _ name: String, _ otherName: String) -> [String] {
        var lines: [String] = []
        if returned != other.returned {
            lines.append("returned: \(name) \(returned) vs \(otherName) \(other.returned)")
        }
        func compare<T: Hashable & CustomStringConvertible>(_ label: String, _ a: [T], _ b: [T]) {
            let onlyA = a.filter { !b.contains($0) }
            let onlyB = b.filter { !a.contains($0) }
            for row in onlyA { lines.append("\(label) only in \(name):  \(row)") }
            for row in onlyB { lines.append("\(label) only in \(otherName): \(row)") }
            if onlyA.isEmpty && onlyB.isEmpty && a != b { lines.append("\(label): same rows, other order") }
        }
        compare("row", rows, other.rows)
        compare("endpoint", endpoints, other.endpoints)
        compare("feed", feeds, other.feeds)
        return lines
    }
}

/// The outbox rules written from the ``Store`` protocol's documentation (Sources/HubCore/Store.swift)
/// and the ``DeliveryPlanner``, not from either store's code: a plain in-memory model the stores
/// are compared with after every step.
struct OutboxReference {
    struct Row {
        var key: String
        var user: String
        var endpointId: String
        var transport: TransportID
        var kind: DeliveryKind
        var notificationId: String?
        var changeVersion: Int64
        var priority: NotificationPriority
        var attempts = 0
        var dueAt: Date
        var pending = true
        var result: DeliveryResult?
        var leaseOwner: String?
        var leaseUntil: Date?
        var claimedAt: Date?
        var suspended: String?
        var lastError: String?
        var finishedAt: Date?
        var firstSentAt: Date?
        /// For ``Retention/expiryAtFinish``: the later of its finish and its notification's
        /// expiry then (``notePurgeAfter()``).
        var purgeAfter: Date?

        var isWaitingTap: Bool { pending && kind == .shoulderTap && leaseOwner == nil }

        var state: OutboxRowState {
            OutboxRowState(
                key: key, transport: transport.rawValue, notificationId: notificationId, changeVersion: changeVersion,
                priority: priority.rawValue, attempts: attempts, dueAt: OutboxClock.seconds(dueAt), pending: pending,
                result: pending ? nil : result?.rawValue, leaseOwner: pending ? leaseOwner : nil,
                leaseUntil: pending ? leaseUntil.map(OutboxClock.seconds) : nil,
                suspended: pending ? suspended : nil, lastError: lastError,
                firstSentAt: firstSentAt.map(OutboxClock.seconds))
        }
    }

    let app: String
    var endpoints: [String: Endpoint] = [:]  // "user/id"
    var notifications: [String: UserNotification] = [:]  // "user/appNotificationId"
    var version: Int64 = 0
    var rows: [Row] = []
    /// Every key given so far: a key a step gives twice (a batch's publishes to one endpoint)
    /// gets a `+` for each earlier one, as the stores' rows are named in ID order.
    var keys: Set<String> = []
    let planner = DeliveryPlanner.standard
    var retention = Retention.whileNotificationLives

    /// When the sweep purges a finished row, once the retention's cut passed its finish.
    enum Retention: Hashable {
        /// Once its notification is gone or expired before the cut (SQLite).
        case whileNotificationLives
        /// Once the cut passed its notification's expiry as it was when the row finished
        /// (PostgreSQL's partitions, `PostgresStore+Partitions.swift`).
        case expiryAtFinish
    }

    init(app: String) { self.app = app }

    /// Sets ``Row/purgeAfter`` of the rows finished since the last call (after every step: a step
    /// is one transaction, and none changes a notification after finishing a row of it).
    mutating func notePurgeAfter() {
        for index in rows.indices where !rows[index].pending && rows[index].purgeAfter == nil {
            guard let finishedAt = rows[index].finishedAt else { continue }
            let row = rows[index]
            let expiry = notifications.values.first { $0.userId == row.user && $0.id == row.notificationId }?
                .expirationDateTime
            rows[index].purgeAfter = max(finishedAt, expiry ?? finishedAt)
        }
    }

    static func urgency(_ priority: NotificationPriority) -> Int {
        switch priority {
        case .high: 2
        case .low: 1
        default: 0
        }
    }

    // MARK: Notifications

    mutating func nextVersion() -> Int64 {
        version += 1
        return version
    }

    func userEndpoints(_ user: String) -> [Endpoint] {
        endpoints.values.filter { $0.userId == user }.sorted { $0.id < $1.id }
    }

    /// Writes `planner`'s plan for `change` of `notification`: taps merge into their endpoint's
    /// pending, unleased tap (newest version, notification and transport; higher priority;
    /// earlier due time; un-parked), the rest are new rows. With `handOff`, the rows due at once
    /// of its transports are leased to its owner as a claim at `now` would.
    /// - Returns: the keys handed off.
    @discardableResult
    mutating func enqueue(
        _ notification: UserNotification, _ change: DeliveryPlanner.Change, now: Date, step: Int,
        handOff: HandOff? = nil
    ) -> [String] {
        // Rows are created (numbered) by due time, then in plan order.
        let plan = planner.plan(notification, change, endpoints: userEndpoints(notification.userId), now: now)
            .enumerated().sorted { ($0.element.dueAt, $0.offset) < ($1.element.dueAt, $1.offset) }.map(\.element)
        var handed: [String] = []
        for planned in plan {
            let index: Int
            if planned.coalesces,
                let waiting = rows.firstIndex(where: {
                    $0.isWaitingTap && $0.user == notification.userId && $0.endpointId == planned.endpointId
                })
            {
                index = waiting
                var row = rows[index]
                if notification.changeVersion >= row.changeVersion {
                    row.changeVersion = notification.changeVersion
                    row.notificationId = notification.id
                    row.transport = planned.transport
                }
                if Self.urgency(notification.priority) > Self.urgency(row.priority) {
                    row.priority = notification.priority
                }
                row.dueAt = min(row.dueAt, planned.dueAt)
                row.suspended = nil
                rows[index] = row
            } else {
                index = rows.count
                var key = "\(step):\(notification.userId):\(planned.endpointId):\(planned.kind)"
                while keys.contains(key) { key += "+" }
                keys.insert(key)
                rows.append(
                    Row(
                        key: key,
                        user: notification.userId, endpointId: planned.endpointId, transport: planned.transport,
                        kind: planned.kind, notificationId: notification.id, changeVersion: notification.changeVersion,
                        priority: notification.priority, dueAt: planned.dueAt))
            }
            if let handOff, planned.dueAt <= now, handOff.transports.contains(rows[index].transport) {
                lease(index, to: handOff.owner, until: handOff.leaseUntil, at: now)
                handed.append(rows[index].key)
            }
        }
        return handed
    }

    mutating func lease(_ index: Int, to owner: String, until: Date, at now: Date) {
        rows[index].leaseOwner = owner
        rows[index].leaseUntil = until
        rows[index].claimedAt = now
        rows[index].attempts += 1
    }

    /// ``FeedStore/publish(_:)``.
    mutating func publish(_ request: PublishRequest, step: Int) -> (created: Bool, handed: [String]) {
        let slot = "\(request.key.userId)/\(request.draft.appNotificationId)"
        var (notification, created) = request.outcome(existing: notifications[slot])
        notification.changeVersion = nextVersion()
        notifications[slot] = notification
        let handed = enqueue(
            notification, .published(mode: request.deliveryMode), now: request.now, step: step,
            handOff: request.handOff)
        return (created, handed)
    }

    /// ``FeedStore/delete(_:appNotificationId:at:planner:)``.
    mutating func delete(user: String, appNotificationId: String, at now: Date, step: Int) -> Bool {
        let slot = "\(user)/\(appNotificationId)"
        guard var notification = notifications[slot] else { return false }
        guard notification.status != .deleted else { return true }
        notification.status = .deleted
        notification.lastModifiedDateTime = now
        notification.changeVersion = nextVersion()
        notifications[slot] = notification
        enqueue(notification, .deleted, now: now, step: step)
        return true
    }

    /// ``FeedStore/updateState(_:)``.
    mutating func updateState(_ change: StateChange, step: Int) -> Bool {
        let slot = "\(change.key.userId)/\(change.id)"
        guard var notification = notifications[slot] else { return false }
        let readChanges = change.readState.map { $0 != notification.readState } ?? false
        let actionChanges = change.userActionState.map { $0 != notification.userActionState } ?? false
        guard readChanges || actionChanges else { return true }
        if let readState = change.readState { notification.readState = readState }
        if let action = change.userActionState { notification.userActionState = action }
        notification.lastModifiedDateTime = change.now
        notification.changeVersion = nextVersion()
        notifications[slot] = notification
        enqueue(notification, .stateChanged(except: change.exceptEndpoint), now: change.now, step: step)
        return true
    }

    /// ``FeedStore/sweep(now:purgeBefore:planner:)`` (no scheduled notifications in these tests).
    mutating func sweep(now: Date, purgeBefore: Date, step: Int) {
        let expiring = notifications.filter { $0.value.status == .active && $0.value.expirationDateTime <= now }
            .sorted { $0.value.changeVersion < $1.value.changeVersion }
        for (slot, var notification) in expiring {
            notification.status = .expired
            notification.lastModifiedDateTime = now
            notification.changeVersion = nextVersion()
            notifications[slot] = notification
            enqueue(notification, .expired, now: now, step: step)
        }
        notifications = notifications.filter {
            $0.value.status == .active || $0.value.status == .scheduled || $0.value.lastModifiedDateTime >= purgeBefore
        }
        notePurgeAfter()
        rows.removeAll { row in
            guard !row.pending, let finishedAt = row.finishedAt, finishedAt < purgeBefore else { return false }
            if retention == .expiryAtFinish { return (row.purgeAfter ?? finishedAt) < purgeBefore }
            let living = notifications.values.contains {
                $0.userId == row.user && $0.id == row.notificationId && $0.expirationDateTime >= purgeBefore
            }
            return !living
        }
    }

    // MARK: Endpoints

    /// ``EndpointStore/upsertEndpoint(_:)`` (tokens are never shared between endpoints here).
    mutating func upsert(_ endpoint: Endpoint) {
        let slot = "\(endpoint.userId)/\(endpoint.id)"
        var stored = endpoint
        if let existing = endpoints[slot] {
            if existing.state == .inactive {
                let revived =
                    existing.token != endpoint.token
                    || existing.inactiveSince.map { endpoint.registeredAt > $0 } ?? true
                if !revived {
                    stored.state = existing.state
                    stored.inactiveReason = existing.inactiveReason
                    stored.inactiveSince = existing.inactiveSince
                }
            }
            stored.lastSyncAt = stored.lastSyncAt ?? existing.lastSyncAt
        }
        endpoints[slot] = stored
    }

    /// ``EndpointStore/deleteEndpoint(_:id:)``: the endpoint and its pending deliveries go.
    mutating func deleteEndpoint(user: String, id: String) -> Bool {
        rows.removeAll { $0.pending && $0.user == user && $0.endpointId == id }
        return endpoints.removeValue(forKey: "\(user)/\(id)") != nil
    }

    // MARK: Outbox

    /// ``OutboxStore/claimDeliveries(_:limit:now:owner:leaseUntil:)``.
    mutating func claim(_ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date) -> [String] {
        let due = rows.indices.filter { index in
            let row = rows[index]
            guard row.pending, row.suspended == nil, row.dueAt <= now else { return false }
            guard row.leaseOwner == nil || (row.leaseUntil ?? now) < now else { return false }
            switch lane {
            case .all: return true
            case .transport(let id): return row.transport == id
            case .otherThan(let ids): return !ids.contains(row.transport)
            }
        }
        .sorted { a, b in
            let (x, y) = (rows[a], rows[b])
            // A lease that ended goes first (OutboxMachine.isClaimed(_:takenOver:before:takenOver:)).
            if (x.leaseOwner != nil) != (y.leaseOwner != nil) { return x.leaseOwner != nil }
            if Self.urgency(x.priority) != Self.urgency(y.priority) {
                return Self.urgency(x.priority) > Self.urgency(y.priority)
            }
            if x.dueAt != y.dueAt { return x.dueAt < y.dueAt }
            return a < b
        }
        .prefix(limit)
        var claimed: [String] = []
        for index in due {
            let row = rows[index]
            if endpoints["\(row.user)/\(row.endpointId)"]?.state == .active {
                lease(index, to: owner, until: leaseUntil, at: now)
                claimed.append(row.key)
            } else {
                finish(index, .superseded, at: now)
            }
        }
        return claimed
    }

    mutating func finish(_ index: Int, _ result: DeliveryResult, at now: Date) {
        rows[index].pending = false
        rows[index].result = result
        rows[index].leaseOwner = nil
        rows[index].leaseUntil = nil
        rows[index].finishedAt = now
    }

    /// ``OutboxStore/renewLeases(_:owner:until:)``.
    mutating func renew(_ keys: [String], owner: String, until: Date) {
        for index in rows.indices where keys.contains(rows[index].key) {
            if rows[index].pending && rows[index].leaseOwner == owner { rows[index].leaseUntil = until }
        }
    }

    /// ``OutboxStore/recordOutcomes(_:)``, one outcome.
    mutating func record(_ key: String, _ change: OutboxOutcome.Change, at now: Date) {
        guard let index = rows.firstIndex(where: { $0.key == key }), rows[index].pending else { return }
        switch change {
        case .finish(let result, _, let goneSince):
            let claimedAt = rows[index].claimedAt
            noteSent(index)
            finish(index, result, at: now)
            guard result == .endpointGone else { return }
            let row = rows[index]
            let slot = "\(row.user)/\(row.endpointId)"
            guard var endpoint = endpoints[slot], endpoint.state == .active,
                endpoint.registeredAt <= goneSince ?? claimedAt ?? now
            else { return }
            endpoint.state = .inactive
            endpoint.inactiveReason = "gone"
            endpoint.inactiveSince = goneSince ?? now
            endpoints[slot] = endpoint
            for other in rows.indices where rows[other].pending && rows[other].user == row.user {
                if rows[other].endpointId == row.endpointId { finish(other, .superseded, at: now) }
            }
        case .retry(let dueAt, let error):
            putBack(index, dueAt: dueAt, error: error, suspending: nil, at: now)
        case .suspend(let reason):
            putBack(index, dueAt: rows[index].dueAt, error: reason, suspending: reason, at: now)
        case .release(let dueAt):
            putBack(index, dueAt: dueAt, error: rows[index].lastError, suspending: nil, at: now, releasing: true)
        }
    }

    /// A retry, suspension or released lease: a tap while a newer unleased tap to its endpoint
    /// waits is finished as superseded, passing on its priority (and version, notification and
    /// transport, if newer); else the row waits again, lease cleared.
    mutating func putBack(
        _ index: Int, dueAt: Date, error: String?, suspending: String?, at now: Date, releasing: Bool = false
    ) {
        let row = rows[index]
        if row.kind == .shoulderTap,
            let newer = rows.indices.first(where: {
                $0 != index && rows[$0].isWaitingTap && rows[$0].user == row.user
                    && rows[$0].endpointId == row.endpointId
            })
        {
            if Self.urgency(row.priority) > Self.urgency(rows[newer].priority) { rows[newer].priority = row.priority }
            if row.changeVersion >= rows[newer].changeVersion {
                rows[newer].changeVersion = row.changeVersion
                rows[newer].notificationId = row.notificationId
                rows[newer].transport = row.transport
            }
            rows[newer].suspended = nil
            rows[index].lastError = error
            if !releasing { noteSent(index) }
            finish(index, .superseded, at: now)
            return
        }
        if !releasing { noteSent(index) }
        rows[index].leaseOwner = nil
        rows[index].leaseUntil = nil
        rows[index].dueAt = dueAt
        rows[index].lastError = error
        if releasing { rows[index].attempts = max(0, rows[index].attempts - 1) }
        if let suspending { rows[index].suspended = suspending }
    }

    /// What an outcome of a send (not a release) notes for the receipt: the first send's claim.
    mutating func noteSent(_ index: Int) {
        rows[index].firstSentAt = rows[index].firstSentAt ?? rows[index].claimedAt
    }

    /// ``OutboxStore/resumeSuspended(at:)``.
    mutating func resumeSuspended(at now: Date) {
        for index in rows.indices where rows[index].pending && rows[index].suspended != nil {
            rows[index].suspended = nil
            rows[index].dueAt = min(rows[index].dueAt, now)
        }
    }

    /// ``OutboxStore/releaseLeases(owner:)``: each leased row, in creation order, put back like a
    /// retry that keeps its due time and last error. (Stores finish with the wall clock's time,
    /// which is after every time of these tests.)
    mutating func releaseLeases(owner: String) {
        for index in rows.indices where rows[index].pending && rows[index].leaseOwner == owner {
            putBack(index, dueAt: rows[index].dueAt, error: rows[index].lastError, suspending: nil, at: .distantFuture)
        }
    }

    // MARK: Observation

    func observation(returned: [String]) -> OutboxObservation {
        let (rows, feeds) = OutboxObservation.ranked(rows: rows.map(\.state), Array(notifications.values))
        return OutboxObservation(
            rows: rows.sorted(), endpoints: endpoints.values.map(OutboxObservation.describe).sorted(), feeds: feeds,
            returned: returned)
    }
}

extension OutboxObservation {
    /// `rows` and the feeds of `notifications` with each change version replaced by its rank
    /// among all the versions seen here: a store's counter may skip values, but the order of the
    /// changes must be the model's, within a feed (what a client sees) and across feeds (a batch
    /// is numbered in request order, as one-by-one publishes would be: `OutboxMachine.batchSegments`;
    /// the sweep expires in version order).
    static func ranked(
        rows: [OutboxRowState], _ notifications: [UserNotification]
    ) -> (rows: [OutboxRowState], feeds: [String]) {
        let versions = Set(rows.map(\.changeVersion)).union(notifications.map(\.changeVersion))
        let ranks = Dictionary(uniqueKeysWithValues: versions.sorted().enumerated().map { ($1, Int64($0 + 1)) })
        let rankedRows = rows.map { row in
            var row = row
            row.changeVersion = ranks[row.changeVersion] ?? row.changeVersion
            return row
        }
        let feeds = notifications.map { notification in
            var notification = notification
            notification.changeVersion = ranks[notification.changeVersion] ?? 0
            return notification
        }
        .sorted { ($0.userId, $0.changeVersion) < ($1.userId, $1.changeVersion) }.map(describe)
        return (rankedRows, feeds)
    }

    static func describe(_ endpoint: Endpoint) -> String {
        "\(endpoint.userId)/\(endpoint.id) \(endpoint.transport) \(endpoint.state.rawValue)"
            + " since=\(endpoint.inactiveSince.map { String(OutboxClock.seconds($0)) } ?? "-")"
    }

    static func describe(_ notification: UserNotification) -> String {
        "\(notification.userId)/\(notification.appNotificationId) \(notification.id) v\(notification.changeVersion)"
            + " \(notification.status) \(notification.readState) \(notification.userActionState)"
    }
}

/// The test's times: whole seconds after a fixed start, exact in both stores.
enum OutboxClock {
    static let start = Date(timeIntervalSince1970: 1_750_000_000)
    static func at(_ seconds: Int) -> Date { start.addingTimeInterval(TimeInterval(seconds)) }
    static func seconds(_ date: Date) -> Int { Int((date.timeIntervalSince(start)).rounded()) }
}
