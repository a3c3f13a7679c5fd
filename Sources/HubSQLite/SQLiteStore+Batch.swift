import Foundation
import GRDB
import HubCore

// A batch publish in one write transaction, with set-based reads and one upsert of its
// deliveries: a broadcast chunk or a batch of 500 users took five statements an item (the
// notification, the endpoints, the waiting taps, the notification's row, the deliveries); it now
// takes one an item (the notification's row) and five for the batch (the badge counters in one),
// its deliveries numbered as item-by-item publishes number them.

extension SQLiteStore {
    /// Publishes `requests` inside the caller's write transaction, with change versions from
    /// `firstVersion` on, each as ``publish(_:content:version:_:)`` would in order. When every
    /// request is for another user of one app, at one time and with one hand-off (a broadcast
    /// chunk, a typical batch: one of HubCore's `OutboxMachine.batchSegments`), what the items
    /// read is read for all of them at once and their deliveries are written together
    /// (``write(_:_:)``): no item can see another's writes, so the outcome is the item-by-item
    /// one. Otherwise the items run one by one.
    static func publish(
        batch requests: [PublishRequest], contents: [NotificationRecord.EncodedContent], firstVersion: Int64,
        _ db: Database
    ) throws -> [PublishResult] {
        let keys = requests.map(\.key)
        guard let head = requests.first, requests.count > 1,
            requests.allSatisfy({
                $0.key.appId == head.key.appId && $0.now.canonical == head.now.canonical && $0.handOff == head.handOff
            }),
            OutboxMachine.batchSegments(keys).count == 1
        else {
            return try zip(requests, contents).enumerated().map { offset, item in
                try publish(item.0, content: item.1, version: firstVersion + Int64(offset), db)
            }
        }
        let appId = head.key.appId
        let users = keys.map(\.userId)
        let existing = try notifications(
            db, appId: appId, users.indices.map { (users[$0], requests[$0].draft.appNotificationId) })
        let endpoints = try activeEndpoints(db, appId: appId, users: users)
        // Read only when a handed-off tap needs it, as a single publish reads it.
        var waiting: [String: Set<String>]?
        var plans: [PreparedPlan] = []
        var stored: [(notification: UserNotification, created: Bool)] = []
        var badges: [BadgeDelta] = []
        plans.reserveCapacity(requests.count)
        stored.reserveCapacity(requests.count)
        for (offset, (request, content)) in zip(requests, contents).enumerated() {
            let user = request.key.userId
            let written = try storeRow(
                request, content: content, version: firstVersion + Int64(offset), existing: existing[user], db)
            stored.append(written)
            badges += BadgeCount.changes(from: existing[user], to: written.notification)
            plans.append(
                try prepare(
                    request.planner, written.notification, .published(mode: request.deliveryMode),
                    now: request.now.canonical, handOff: request.handOff, endpoints: endpoints[user] ?? [],
                    waiting: {
                        if waiting == nil { waiting = try waitingTaps(db, appId: appId, users: users) }
                        return waiting?[user] ?? []
                    }))
        }
        try countBadges(badges, db)
        let enqueued = try write(plans, db)
        return zip(stored, enqueued).map { stored, enqueued in
            PublishResult(
                notification: canonical(stored.notification), created: stored.created,
                handedOff: enqueued.handedOff, leftForClaim: enqueued.leftForClaim)
        }
    }

    /// Moves the badge counters of `deltas` (of distinct users: one delta per counter) in one
    /// statement, as ``countBadge(from:to:_:)`` moves each.
    private static func countBadges(_ deltas: [BadgeDelta], _ db: Database) throws {
        guard let first = deltas.first else { return }
        try db.cachedStatement(
            sql: """
                INSERT INTO badgeCounter (appId, userId, scope, unread)
                SELECT ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
                FROM json_each(?) WHERE true
                ON CONFLICT (appId, userId, scope) DO UPDATE SET unread = unread + excluded.unread
                """
        ).execute(arguments: [
            first.appId,
            JSONText.array(
                BadgeCount.merged(deltas).map {
                    JSONText.array([
                        JSONText.string($0.userId), JSONText.string($0.scope), JSONText.number(Int64($0.delta)),
                    ])
                }),
        ])
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
