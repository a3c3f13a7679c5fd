import Foundation
import GRDB
import HubCore

// A batch publish in one write transaction, with set-based reads and one insert of its handed-off
// deliveries: a broadcast chunk or a batch of 500 users took five statements an item (the
// notification, the endpoints, the waiting taps, the notification's row, the leased deliveries);
// it now takes one an item (the notification's row; an upsert more for a tap that merges into a
// waiting one) and four for the batch.

extension SQLiteStore {
    /// What a batch read for one user before the user's item is published: the notification with
    /// the item's `appNotificationId`, the user's active endpoints and the endpoints with a waiting
    /// tap, as the item's own reads would have found them.
    struct UserPrefetch {
        var existing: UserNotification?
        var endpoints: [Endpoint]
        var waiting: Set<String>
    }

    /// Publishes `requests` inside the caller's write transaction, with change versions from
    /// `firstVersion` on, each as ``publish(_:content:version:_:prefetch:deferring:)`` would in
    /// order. When every request is for another user of one app (a broadcast chunk, a typical
    /// batch), what the items read is read for all of them at once and the deliveries handed off
    /// are inserted together (one statement per due time): no item can see another's writes, so
    /// the outcome is the item-by-item one. Otherwise the items run one by one.
    static func publish(
        batch requests: [PublishRequest], contents: [NotificationRecord.EncodedContent], firstVersion: Int64,
        _ db: Database
    ) throws -> [PublishResult] {
        let keys = requests.map(\.key)
        guard requests.count > 1, let appId = keys.first?.appId, keys.allSatisfy({ $0.appId == appId }),
            Set(keys).count == keys.count
        else {
            return try zip(requests, contents).enumerated().map { offset, item in
                try publish(item.0, content: item.1, version: firstVersion + Int64(offset), db)
            }
        }
        let users = keys.map(\.userId)
        let existing = try notifications(
            db, appId: appId, users.indices.map { (users[$0], requests[$0].draft.appNotificationId) })
        let endpoints = try activeEndpoints(db, appId: appId, users: users)
        let waiting = try waitingTaps(db, appId: appId, users: users)
        let leased = LeasedInsertBatch()
        var results: [PublishResult] = []
        results.reserveCapacity(requests.count)
        for (offset, (request, content)) in zip(requests, contents).enumerated() {
            let user = request.key.userId
            let prefetch = UserPrefetch(
                existing: existing[user], endpoints: endpoints[user] ?? [], waiting: waiting[user] ?? [])
            results.append(
                try publish(
                    request, content: content, version: firstVersion + Int64(offset), db, prefetch: prefetch,
                    deferring: leased))
        }
        let inserted = try leased.insert(appId: appId, db)
        for (index, user) in users.enumerated() {
            guard let deliveries = inserted[user] else { continue }
            results[index].handedOff += HandOff.claimed(
                deliveries, endpoints: endpoints[user] ?? [], notification: results[index].notification)
        }
        return results
    }

    /// The notifications of `items` (a user and an `appNotificationId` each, one item per user),
    /// by user: one statement.
    private static func notifications(
        _ db: Database, appId: String, _ items: [(userId: String, appNotificationId: String)]
    ) throws -> [String: UserNotification] {
        let rows = try NotificationRecord.fetchAll(
            db.cachedStatement(sql: NotificationRecord.byAppNotificationIdsQuery),
            arguments: [
                appId,
                JSONText.array(
                    items.map { JSONText.array([JSONText.string($0.userId), JSONText.string($0.appNotificationId)]) }),
            ])
        return Dictionary(
            rows.map { ($0.notification.userId, $0.notification) }, uniquingKeysWith: { first, _ in first })
    }

    /// The active endpoints of `users`, by user, in ID order (as ``activeEndpoints(_:_:)``): one
    /// statement.
    private static func activeEndpoints(_ db: Database, appId: String, users: [String]) throws -> [String: [Endpoint]] {
        var endpoints: [String: [Endpoint]] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: EndpointRecord.activeOfUsersQuery),
            arguments: [appId, JSONText.array(users.map(JSONText.string))])
        while let row = try rows.next() {
            let endpoint = EndpointRecord(positional: row).endpoint
            endpoints[endpoint.userId, default: []].append(endpoint)
        }
        return endpoints
    }

    /// The endpoints of `users` with a pending, unleased tap, by user: one statement.
    private static func waitingTaps(_ db: Database, appId: String, users: [String]) throws -> [String: Set<String>] {
        var waiting: [String: Set<String>] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT userId, endpointId FROM delivery
                    WHERE appId = ? AND userId IN (SELECT value FROM json_each(?))
                        AND state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL
                    """),
            arguments: [appId, JSONText.array(users.map(JSONText.string))])
        while let row = try rows.next() {
            waiting[row[0] as String, default: []].insert(row[1])
        }
        return waiting
    }
}

/// The deliveries a batch's items hand off that a publish alone would insert leased at once
/// (``SQLiteStore/enqueue(_:_:_:now:_:handOff:prefetched:deferring:)``), gathered and inserted
/// after the items in one statement per due time, in item order (numbered in that order among
/// themselves; rows an item's upsert adds for a merging tap are numbered before them).
final class LeasedInsertBatch {
    /// What the rows of one statement share.
    private struct Group: Hashable {
        var now: Date
        var dueAt: Date
        var owner: String
        var leaseUntil: Date
    }

    /// A row, as its returned ID is matched back (unique in the batch).
    private struct Key: Hashable {
        var userId: String
        var endpointId: String
        var kind: DeliveryKind
    }

    private var groups: [Group] = []
    private var rows: [Group: [(notification: UserNotification, planned: PlannedDelivery)]] = [:]
    private var keys: Set<Key> = []

    /// Takes `planned` (due at `dueAt`, of `notification`, leased to `handOff`'s owner at `now`)
    /// for the batch's insert.
    /// - Returns: false (nothing taken) when a row would repeat one taken before; insert them now.
    func add(
        _ planned: [PlannedDelivery], of notification: UserNotification, dueAt: Date, now: Date, _ handOff: HandOff
    ) -> Bool {
        let added = planned.map { Key(userId: notification.userId, endpointId: $0.endpointId, kind: $0.kind) }
        guard Set(added).count == added.count, keys.isDisjoint(with: added) else { return false }
        keys.formUnion(added)
        let group = Group(now: now, dueAt: dueAt, owner: handOff.owner, leaseUntil: handOff.leaseUntil)
        if rows[group] == nil { groups.append(group) }
        rows[group, default: []] += planned.map { (notification, $0) }
        return true
    }

    /// Inserts every row taken, leased as ``SQLiteStore`` inserts a hand-off's rows.
    /// - Returns: the deliveries inserted, by user, in the order taken.
    func insert(appId: String, _ db: Database) throws -> [String: [Delivery]] {
        var deliveries: [String: [Delivery]] = [:]
        for group in groups {
            let taken = rows[group] ?? []
            var ids: [Key: Int64] = [:]
            let returned = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        INSERT INTO delivery (appId, userId, endpointId, transport, kind, notificationId, changeVersion,
                            priority, urgency, state, attempts, createdAt, dueAt, leaseOwner, leaseUntil, claimedAt)
                        SELECT ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
                            json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
                            json_extract(value, '$[6]'), json_extract(value, '$[7]'), 'pending', 1, ?, ?, ?, ?, ?
                        FROM json_each(?)
                        RETURNING id, userId, endpointId, kind
                        """),
                arguments: [
                    appId, group.now.canonical.storedSeconds, group.dueAt.canonical.storedSeconds, group.owner,
                    group.leaseUntil.canonical.storedSeconds, group.now.canonical.storedSeconds,
                    JSONText.array(
                        taken.map { row in
                            let n = row.notification
                            return JSONText.array([
                                JSONText.string(n.userId), JSONText.string(row.planned.endpointId),
                                JSONText.string(row.planned.transport.rawValue),
                                JSONText.string(row.planned.kind.rawValue), JSONText.string(n.id),
                                JSONText.number(n.changeVersion), JSONText.string(n.priority.rawValue),
                                JSONText.number(Int64(n.priority.urgency)),
                            ])
                        }),
                ])
            while let row = try returned.next() {
                ids[Key(userId: row[1], endpointId: row[2], kind: DeliveryKind(rawValue: row[3]))] = row[0]
            }
            for (n, planned) in taken {
                guard let id = ids[Key(userId: n.userId, endpointId: planned.endpointId, kind: planned.kind)] else {
                    continue
                }
                deliveries[n.userId, default: []].append(
                    SQLiteStore.leasedDelivery(id: id, planned, of: n, dueAt: group.dueAt, now: group.now))
            }
        }
        return deliveries
    }
}
