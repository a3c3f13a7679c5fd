public import Foundation
public import HubCore
import Logging
import PostgresNIO

// Publishing in five round trips: BEGIN; lock the feed; read what the publish depends on (the
// notification it may update, the user's endpoints, which of them have a pending tap to merge
// into); write the notification and every planned delivery, leasing the hand-off, in one
// statement; COMMIT. The feed lock and the read are separate statements because at READ
// COMMITTED a statement reads a snapshot taken when it starts (see `PostgresStore+Versions.swift`).
//
// Hand-offs in the write: a new row that is handed off is inserted leased. A tap that merges
// into a waiting one cannot be (a leased row is outside the index `hub_delivery_pending_tap` that
// finds the waiting tap), so taps to endpoints that have a waiting tap, and taps not handed off,
// are inserted unleased with `ON CONFLICT … DO UPDATE`, which leases the merged tap when it is
// due and its transport is handed off. While the feed is locked no other transaction can make a
// tap wait for an endpoint (publishes, put-backs and the sweep lock the feed; claims only lease
// waiting taps), so the read's answer holds until the write.
extension PostgresStore {
    /// Upserts the notification `(app, user, appNotificationId)` and enqueues its deliveries, in
    /// one transaction that holds the feed's lock (see `PostgresStore+Versions.swift`).
    ///
    /// - New: `id = request.newId`, created = last modified = `now`, unread, no interaction, active.
    /// - Existing and active: content replaced, read/action state kept; `created == false`.
    /// - Existing tombstone (expired or deleted): revived like a new one but keeping its `id`;
    ///   `created == true`.
    ///
    /// Every case takes the next change version. Deliveries: what `request.planner` plans for
    /// the user's endpoints as this transaction reads them; those due at once whose transport
    /// `request.handOff` names are leased to its owner and returned.
    public func publish(_ request: PublishRequest) async throws -> PublishResult {
        try Identifier.checkBeforeStoring(request)
        return try await transaction { db in
            let draft = request.draft
            let key = request.key
            try await Self.lockFeed(key, on: db)
            let read = try await Self.readForPublish(key, appNotificationId: draft.appNotificationId, db)
            var notification: UserNotification
            let created: Bool
            if var current = read.existing, current.status == .active {
                current.apply(draft, expiration: request.expirationDateTime)
                current.lastModifiedDateTime = request.now
                notification = current
                created = false
            } else {
                notification = UserNotification(
                    id: read.existing?.id ?? request.newId, appId: key.appId, userId: key.userId,
                    appNotificationId: draft.appNotificationId, payload: draft.payload,
                    expirationDateTime: request.expirationDateTime, createdDateTime: request.now,
                    lastModifiedDateTime: request.now)
                notification.apply(draft, expiration: request.expirationDateTime)
                created = true
            }
            let plan = request.planner.plan(
                notification, .published(mode: request.deliveryMode), endpoints: read.endpoints, now: request.now)
            let rows = Self.coalesced(plan.map { OutboxRow($0, of: notification) })
            let written = try await Self.write(
                notification, rows, waitingTaps: read.waitingTaps, now: request.now, handOff: request.handOff, db)
            let leased = written.deliveries.filter(\.handed).map(\.delivery)
            return PublishResult(
                notification: written.notification, created: created,
                handedOff: HandOff.claimed(leased, endpoints: read.endpoints, notification: written.notification),
                leftForClaim: written.deliveries.count { $0.due && !$0.handed })
        }
    }

    /// What a publish reads after locking the feed.
    struct PublishRead {
        var existing: UserNotification?
        var endpoints: [Endpoint] = []
        /// Endpoints with a pending, unleased tap that a new tap merges into.
        var waitingTaps: Set<String> = []
    }

    static func readForPublish(_ key: FeedKey, appNotificationId: String, _ db: Session) async throws -> PublishRead {
        var binds = PostgresBindings(capacity: 3)
        binds.append(key.appId)
        binds.append(key.userId)
        binds.append(appNotificationId)
        var read = PublishRead()
        for row in try await db.run(ReadForPublish.self, binds) {
            let row = row.makeRandomAccess()
            if read.existing == nil, try row.value(NotificationColumns.Names.plain.id, as: String?.self) != nil {
                read.existing = try UserNotification(row: row)
            }
            guard try row.value(EndpointColumns.Names.joined.id, as: String?.self) != nil else { continue }
            let endpoint = try Endpoint(row: row, .joined)
            read.endpoints.append(endpoint)
            if try row.value("waiting_tap", as: Bool.self) { read.waitingTaps.insert(endpoint.id) }
        }
        return read
    }

    /// Writes `n` with the next change version and `rows` (its planned deliveries) in one
    /// statement, leasing those due at once whose transport `handOff` names.
    /// - Returns: the notification as stored, and each delivery row written with whether it was
    ///   leased to the hand-off's owner and whether it is due at once (compared in the database,
    ///   which stores times in microseconds).
    static func write(
        _ n: UserNotification, _ rows: [OutboxRow], waitingTaps: Set<String>, now: Date, handOff: HandOff?,
        _ db: Session
    ) async throws -> (notification: UserNotification, deliveries: [(delivery: Delivery, handed: Bool, due: Bool)]) {
        var binds = try notificationBindings(n)
        binds.append(now)
        let hands = rows.map { row in
            handOff.map { row.dueAt <= now && $0.transports.contains(TransportID(rawValue: row.transport)) } ?? false
        }
        binds.append(rows.map(\.endpointId))
        binds.append(rows.map(\.transport))
        binds.append(rows.map(\.kind))
        binds.append(rows.map(\.dueAt))
        binds.append(
            zip(rows, hands).map { row, hand in row.coalesces && (waitingTaps.contains(row.endpointId) || !hand) })
        binds.append(hands)
        binds.append(n.priority.urgency)
        binds.append(handOff.map { $0.transports.map(\.rawValue) } ?? [])
        binds.append(handOff?.owner)
        binds.append(handOff?.leaseUntil)
        let result = try await db.run(WriteForPublish.self, binds)
        guard let first = result.first else {
            throw PostgresStoreError(.server, "saving notification \(n.id) returned no row")
        }
        let stored = try UserNotification(row: first, .joined)
        var deliveries: [(delivery: Delivery, handed: Bool, due: Bool)] = []
        for row in result {
            let row = row.makeRandomAccess()
            guard try row.value("id", as: Int64?.self) != nil else { continue }
            deliveries.append(
                (try Delivery(row: row), try row.value("handed", as: Bool.self), try row.value("due", as: Bool.self)))
        }
        return (stored, deliveries)
    }

    /// The values of `n`'s columns but `change_version`, as `$1` … `$17` of ``WriteForPublish``.
    static func notificationBindings(_ n: UserNotification) throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: 27)
        binds.append(n.appId)
        binds.append(n.userId)
        binds.append(n.id)
        binds.append(n.appNotificationId)
        binds.append(n.groupName)
        binds.append(n.priority.rawValue)
        try binds.append(JSONColumn(n.payload))
        try binds.append(JSONColumn(n.targetPolicy))
        binds.append(n.displayTimeToLive)
        binds.append(n.expirationDateTime)
        binds.append(n.fallbackPolicy?.timeoutSeconds)
        binds.append(n.deliveryMode?.rawValue)
        binds.append(n.createdDateTime)
        binds.append(n.lastModifiedDateTime)
        binds.append(n.readState.rawValue)
        binds.append(n.userActionState.rawValue)
        binds.append(n.status.rawValue)
        return binds
    }

    /// The notification with `appNotificationId` (if any) and the user's endpoints (every
    /// state, by ID), each with whether a tap waits for it: one row per endpoint, or one row
    /// with NULL endpoint columns.
    enum ReadForPublish: NamedStatement {
        static let name = "hub_read_for_publish"
        static let sql = """
            SELECT x.*, \(EndpointColumns.joined),
                EXISTS (
                    SELECT FROM hub_delivery d
                    WHERE d.app_id = e.app_id AND d.user_id = e.user_id AND d.endpoint_id = e.id
                        AND d.state = 'pending' AND d.kind = 'shoulderTap' AND d.lease_owner IS NULL
                ) AS waiting_tap
            FROM (SELECT 1) AS one
            LEFT JOIN (
                SELECT \(NotificationColumns.list) FROM hub_notification
                WHERE app_id = $1 AND user_id = $2 AND app_notification_id = $3
            ) AS x ON true
            LEFT JOIN hub_endpoint e ON e.app_id = $1 AND e.user_id = $2
            ORDER BY e.id COLLATE "C"
            """
    }

    /// Upserts the notification (`$1` … `$17`) with the next change version and writes its
    /// deliveries (`$19` … `$24`, one array element per row; `$18` is now): rows that may merge
    /// (`merges`) through `ON CONFLICT`, the others as plain inserts, leased to `$27` until `$28`
    /// when `hand`. Returns a row per delivery written (with `handed` and `due`), each with the stored
    /// notification as `n_…` columns; one row with NULL delivery columns when there is none.
    enum WriteForPublish: NamedStatement {
        static let name = "hub_write_for_publish"
        static let sql = """
            WITH saved AS (
                \(NotificationColumns.upsert)
            ), planned AS (
                SELECT p.*, s.change_version
                FROM unnest($19::text[], $20::text[], $21::text[], $22::timestamptz[], $23::boolean[], $24::boolean[])
                    AS p(endpoint_id, transport, kind, due_at, merges, hand)
                CROSS JOIN saved s
            ), merged AS (
                INSERT INTO hub_delivery AS d (app_id, user_id, endpoint_id, transport, kind, notification_id,
                    change_version, priority, urgency, state, created_at, due_at)
                SELECT $1, $2, endpoint_id, transport, kind, $3, change_version, $6, $25::smallint, 'pending', $18, due_at
                FROM planned WHERE merges
                ON CONFLICT (app_id, user_id, endpoint_id)
                    WHERE state = 'pending' AND kind = 'shoulderTap' AND lease_owner IS NULL
                DO UPDATE SET
                    \(DeliveryColumns.tapMerge),
                    lease_owner = CASE WHEN \(mergedHand) THEN $27::text END,
                    lease_until = CASE WHEN \(mergedHand) THEN $28::timestamptz END,
                    claimed_at = CASE WHEN \(mergedHand) THEN $18 ELSE d.claimed_at END,
                    attempts = d.attempts + CASE WHEN \(mergedHand) THEN 1 ELSE 0 END
                RETURNING \(qualified(DeliveryColumns.list, "d")), d.lease_owner IS NOT NULL AS handed,
                    d.due_at <= $18 AS due
            ), inserted AS (
                INSERT INTO hub_delivery (app_id, user_id, endpoint_id, transport, kind, notification_id,
                    change_version, priority, urgency, state, created_at, due_at, lease_owner, lease_until, claimed_at,
                    attempts)
                SELECT $1, $2, endpoint_id, transport, kind, $3, change_version, $6, $25::smallint, 'pending', $18,
                    due_at, CASE WHEN hand THEN $27::text END, CASE WHEN hand THEN $28::timestamptz END,
                    CASE WHEN hand THEN $18 END, CASE WHEN hand THEN 1 ELSE 0 END
                FROM planned WHERE NOT merges
                RETURNING \(DeliveryColumns.list), lease_owner IS NOT NULL AS handed, due_at <= $18 AS due
            ), written AS (
                SELECT * FROM merged UNION ALL SELECT * FROM inserted
            )
            SELECT w.*, \(NotificationColumns.joined)
            FROM saved n LEFT JOIN written w ON true
            """

        /// Whether a tap that merged into a waiting one is leased: due at once, and going by a
        /// handed-off transport (the values after the merge, from the row's old values).
        private static let mergedHand = """
            ($27::text IS NOT NULL AND LEAST(d.due_at, EXCLUDED.due_at) <= $18
                AND (CASE WHEN EXCLUDED.change_version >= d.change_version
                    THEN EXCLUDED.transport ELSE d.transport END) = ANY($26::text[]))
            """
    }
}
