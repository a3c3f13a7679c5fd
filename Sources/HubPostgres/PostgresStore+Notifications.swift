public import Foundation
public import HubCore
import Logging
import PostgresNIO

// Notifications and feeds: delete, state changes and reads. Publishing is in
// `PostgresStore+Publish.swift`, the sweep in `PostgresStore+Sweep.swift`.
extension PostgresStore {
    /// Marks the notification (by `appNotificationId`, else by hub ID) deleted: a tombstone with a
    /// new change version, announced by the taps `planner` plans.
    ///
    /// - Returns: the tombstone; an already deleted notification unchanged; `nil` if none.
    public func delete(
        _ key: FeedKey, appNotificationId: String, at now: Date, planner: DeliveryPlanner
    ) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(key, id: appNotificationId)
        return try await transaction { db in
            try await Self.lockFeed(key, on: db)
            var found = try await Self.fetchNotification(key, appNotificationId: appNotificationId, db)
            if found == nil { found = try await Self.fetchNotification(key, id: appNotificationId, db) }
            guard var notification = found else { return nil }
            guard notification.status != .deleted else { return notification }
            let before = notification
            notification.status = .deleted
            notification.lastModifiedDateTime = now
            let (tombstone, endpoints) = try await Self.save(notification, db)
            try await Self.countBadges([(before, tombstone)], db)
            try await Self.enqueue(tombstone, .deleted, endpoints: endpoints, planner: planner, now: now, on: db)
            return tombstone
        }
    }

    /// Applies a device's read / action state change (by hub ID, else by `appNotificationId`).
    ///
    /// A change that sets nothing new returns the stored notification unchanged (no new version,
    /// no taps). Otherwise the notification gets a new change version and the taps
    /// `change.planner` plans (the user's endpoints but `exceptEndpoint`). Tombstones change too.
    public func updateState(_ change: StateChange) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(change)
        return try await transaction { db in
            try await Self.lockFeed(change.key, on: db)
            guard var notification = try await Self.findNotification(change.key, id: change.id, db) else {
                return nil
            }
            let readChanges = change.readState.map { $0 != notification.readState } ?? false
            let actionChanges = change.userActionState.map { $0 != notification.userActionState } ?? false
            guard readChanges || actionChanges else { return notification }
            let before = notification
            if let readState = change.readState { notification.readState = readState }
            if let userActionState = change.userActionState { notification.userActionState = userActionState }
            notification.lastModifiedDateTime = change.now
            let (updated, endpoints) = try await Self.save(notification, db)
            try await Self.countBadges([(before, updated)], db)
            try await Self.noteWhoChanged(
                updated, change, read: readChanges && updated.readState == .read,
                dismissed: actionChanges && updated.userActionState == .dismissed, db)
            try await Self.enqueue(
                updated, .stateChanged(except: change.exceptEndpoint), endpoints: endpoints, planner: change.planner,
                now: change.now, on: db)
            return updated
        }
    }

    /// One notification of the feed, by hub ID, else by `appNotificationId`; tombstones included.
    public func notification(_ key: FeedKey, id: String) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await rows(
            """
            SELECT \(unescaped: NotificationColumns.list) FROM hub_notification
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND (id = \(id) OR app_notification_id = \(id))
            ORDER BY id = \(id) DESC LIMIT 1
            """
        ).first.map { try UserNotification(row: $0) }
    }

    /// The user's notifications matching `filter`, newest first (created, then change version),
    /// at most `filter.limit`.
    public func history(_ key: FeedKey, filter: HistoryFilter) async throws -> [UserNotification] {
        try Identifier.checkBeforeStoring(key)
        guard filter.limit > 0 else { return [] }
        let readState = filter.readState?.rawValue
        let userActionState = filter.userActionState?.rawValue
        let status = filter.status?.rawValue
        // Exact expiry at read time (`asOf`): an active row past its expiration counts as expired.
        let asOf = filter.status == .active || filter.status == .expired ? filter.asOf : nil
        let platform = filter.platform?.rawValue
        return try await rows(
            """
            SELECT \(unescaped: NotificationColumns.list) FROM hub_notification
            WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                AND (\(readState)::text IS NULL OR read_state = \(readState))
                AND (\(userActionState)::text IS NULL OR user_action_state = \(userActionState))
                AND (\(status)::text IS NULL OR (CASE
                    WHEN \(asOf)::timestamptz IS NULL THEN status
                    WHEN status = 'active' AND expiration_date_time <= \(asOf)::timestamptz THEN 'expired'
                    ELSE status END) = \(status))
                AND (\(platform)::text IS NULL OR jsonb_array_length(target_policy -> 'platformTypes') = 0
                    OR target_policy -> 'platformTypes' @> jsonb_build_array(\(platform)::text))
            ORDER BY created_date_time DESC, change_version DESC LIMIT \(filter.limit)
            """
        ).map { try UserNotification(row: $0) }
    }

    /// The changes of the feed after `version`, oldest first, at most `limit` (tombstones included).
    /// `hasMore` tells whether later changes exist; `version` is the last change's, or `version`
    /// itself when there is none.
    public func feed(_ key: FeedKey, after version: Int64, limit: Int) async throws -> FeedPage {
        try Identifier.checkBeforeStoring(key)
        let pageSize = min(max(limit, 0), Int(Int32.max) - 1)
        var binds = PostgresBindings(capacity: 4)
        binds.append(key.appId)
        binds.append(key.userId)
        binds.append(version)
        binds.append(pageSize + 1)
        let found = try await withSession { [binds] session in try await session.run(FeedChanges.self, binds) }
            .map { try UserNotification(row: $0) }
        let changes = Array(found.prefix(pageSize))
        return FeedPage(
            changes: changes, version: changes.last?.changeVersion ?? version, hasMore: found.count > changes.count)
    }

    enum FeedChanges: NamedStatement {
        static let name = "hub_feed_changes"
        static let sql = """
            SELECT \(NotificationColumns.list) FROM hub_notification
            WHERE app_id = $1 AND user_id = $2 AND change_version > $3::bigint
            ORDER BY change_version LIMIT $4::bigint
            """
    }
}

// MARK: - Helpers (inside a transaction)

extension PostgresStore {
    static func fetchNotification(_ key: FeedKey, id: String, _ db: Session) async throws -> UserNotification? {
        try await db.rows(
            """
            SELECT \(unescaped: NotificationColumns.list) FROM hub_notification
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(id)
            """
        ).first.map { try UserNotification(row: $0) }
    }

    static func fetchNotification(
        _ key: FeedKey, appNotificationId: String, _ db: Session
    ) async throws -> UserNotification? {
        var binds = PostgresBindings(capacity: 3)
        binds.append(key.appId)
        binds.append(key.userId)
        binds.append(appNotificationId)
        return try await db.run(FetchByAppNotificationID.self, binds).first.map { try UserNotification(row: $0) }
    }

    enum FetchByAppNotificationID: NamedStatement {
        static let name = "hub_fetch_by_app_notification_id"
        static let sql = """
            SELECT \(NotificationColumns.list) FROM hub_notification
            WHERE app_id = $1 AND user_id = $2 AND app_notification_id = $3
            """
    }

    /// By hub ID, else by `appNotificationId`.
    static func findNotification(_ key: FeedKey, id: String, _ db: Session) async throws -> UserNotification? {
        if let found = try await fetchNotification(key, id: id, db) { return found }
        return try await fetchNotification(key, appNotificationId: id, db)
    }

    /// Inserts or replaces the row of `n` with the next change version, and reads the user's
    /// endpoints (every state, by ID) in the same statement. Call with the feed locked: the
    /// endpoints are then those the change's deliveries must be planned for.
    /// - Returns: the row as stored, and the endpoints.
    static func save(_ n: UserNotification, _ db: Session) async throws -> (UserNotification, [Endpoint]) {
        let rows = try await db.run(Save.self, try notificationBindings(n))
        guard let first = rows.first else {
            throw PostgresStoreError(.server, "saving notification \(n.id) returned no row")
        }
        let stored = try UserNotification(row: first)
        var endpoints: [Endpoint] = []
        endpoints.reserveCapacity(rows.count)
        for row in rows {
            let row = row.makeRandomAccess()
            guard try row.value(EndpointColumns.Names.joined.id, as: String?.self) != nil else { continue }
            endpoints.append(try Endpoint(row: row, .joined))
        }
        return (stored, endpoints)
    }

    /// The values of `n`'s columns but `change_version`, as `$1` … `$19` of
    /// ``NotificationColumns/upsert``.
    static func notificationBindings(_ n: UserNotification) throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: 19)
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
        try binds.append(n.fallbackPolicy.flatMap { $0.hasDetails ? JSONColumn($0) : nil })
        binds.append(n.scheduledDateTime)
        return binds
    }

    /// Upserts a notification with the next change version and reads its user's endpoints.
    /// Parameters that may be NULL have a cast, so that their type never depends on a first run.
    enum Save: NamedStatement {
        static let name = "hub_save_notification"
        static let sql = """
            WITH saved AS (
                \(NotificationColumns.upsert)
            )
            SELECT saved.*, \(EndpointColumns.joined)
            FROM saved LEFT JOIN hub_endpoint e ON e.app_id = saved.app_id AND e.user_id = saved.user_id
            ORDER BY e.id COLLATE "C"
            """
    }
}
