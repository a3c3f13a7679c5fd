public import Foundation
import GRDB
public import HubCore

// Notifications and feeds: publish, delete, state changes, reads, and the expiry sweep.
extension SQLiteStore {
    /// Upserts the notification `(appId, userId, appNotificationId)` and enqueues its deliveries,
    /// in one transaction; the notification it leaves is ``PublishRequest/outcome(existing:)``'s.
    ///
    /// Every case takes the next change version, then enqueues what `request.planner` plans for the
    /// user's endpoints (see ``enqueue(_:_:_:now:_:)``).
    public func publish(_ request: PublishRequest) async throws -> PublishResult {
        try Identifier.checkBeforeStoring(request)
        let content = try Self.content(of: request)
        return try await write { db in
            try Self.publish(request, content: content, version: try Self.nextChangeVersion(db), db)
        }
    }

    /// Publishes `requests` in one transaction (one commit, one fsync, however many), each as
    /// ``publish(_:)`` would, in order: a later request for the same notification finds what an
    /// earlier one stored and updates it. The change versions are taken in one statement, and a
    /// batch of distinct users reads and writes its deliveries in set-based statements
    /// (``publish(batch:contents:firstVersion:_:)``). A batch of several is a
    /// ``GroupCommit/Size/batch`` job: single publishes do not wait for the batches queued with
    /// them.
    public func publish(batch requests: [PublishRequest]) async throws -> [PublishResult] {
        guard !requests.isEmpty else { return [] }
        for request in requests { try Identifier.checkBeforeStoring(request) }
        // A broadcast's parts publish one draft to every user: its JSON is encoded once.
        var encoded: [NotificationRecord.EncodedContent] = []
        encoded.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            if index > 0, let last = encoded.last, Self.sameContent(requests[index - 1].draft, request.draft) {
                encoded.append(last)
            } else {
                encoded.append(try Self.content(of: request))
            }
        }
        let contents = encoded
        return try await write(size: requests.count > 1 ? .batch : .small) { db in
            let last = try Self.nextChangeVersions(db, count: requests.count)
            return try Self.publish(
                batch: requests, contents: contents, firstVersion: last - Int64(requests.count) + 1, db)
        }
    }

    /// The stored JSON of a request's payload and policies.
    private static func content(of request: PublishRequest) throws -> NotificationRecord.EncodedContent {
        try NotificationRecord.EncodedContent(
            payload: request.draft.payload, targetPolicy: request.draft.targetPolicy,
            fallbackPolicy: request.draft.fallbackPolicy)
    }

    /// Whether two drafts store the same JSON columns (payload and policies).
    private static func sameContent(_ one: NotificationDraft, _ other: NotificationDraft) -> Bool {
        one.payload == other.payload && one.targetPolicy == other.targetPolicy
            && one.fallbackPolicy == other.fallbackPolicy
    }

    /// One publish inside a write transaction, with change version `version`.
    static func publish(
        _ request: PublishRequest, content: NotificationRecord.EncodedContent, version: Int64, _ db: Database
    ) throws -> PublishResult {
        let existing = try fetchNotification(db, request.key, appNotificationId: request.draft.appNotificationId)
        let (notification, created) = try store(request, content: content, version: version, existing: existing, db)
        let enqueued = try enqueue(
            request.planner, notification, .published(mode: request.deliveryMode), now: request.now.canonical, db,
            handOff: request.handOff)
        return PublishResult(
            notification: canonical(notification), created: created, handedOff: enqueued.handedOff,
            leftForClaim: enqueued.leftForClaim)
    }

    /// Stores the notification a publish leaves (``PublishRequest/outcome(existing:)`` of
    /// `existing`, the stored one with the request's `appNotificationId`) with change version
    /// `version`, and counts it for the badge.
    static func store(
        _ request: PublishRequest, content: NotificationRecord.EncodedContent, version: Int64,
        existing: UserNotification?, _ db: Database
    ) throws -> (notification: UserNotification, created: Bool) {
        let stored = try storeRow(request, content: content, version: version, existing: existing, db)
        try countBadge(from: existing, to: stored.notification, db)
        return stored
    }

    /// ``store(_:content:version:existing:_:)`` but the badge: the caller counts it.
    static func storeRow(
        _ request: PublishRequest, content: NotificationRecord.EncodedContent, version: Int64,
        existing: UserNotification?, _ db: Database
    ) throws -> (notification: UserNotification, created: Bool) {
        var request = request
        request.now = request.now.canonical
        var (notification, created) = request.outcome(existing: existing)
        notification.changeVersion = version
        if existing == nil {
            try NotificationRecord.insert(notification, content: content, db)
        } else {
            try NotificationRecord.update(notification, content: content, db, published: true)
        }
        return (notification, created)
    }

    /// Marks the notification (by `appNotificationId`, else by hub ID) deleted: a tombstone with a
    /// new change version, announced by the planned taps.
    ///
    /// - Returns: the tombstone; an already deleted notification unchanged; `nil` if none.
    public func delete(
        _ key: FeedKey, appNotificationId: String, at now: Date, planner: DeliveryPlanner
    ) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(key, id: appNotificationId)
        return try await write { db in
            guard
                var notification = try Self.fetchNotification(db, key, appNotificationId: appNotificationId)
                    ?? Self.fetchNotification(db, key, id: appNotificationId)
            else { return nil }
            guard notification.status != .deleted else { return notification }
            let before = notification
            notification.status = .deleted
            notification.lastModifiedDateTime = now.canonical
            notification.changeVersion = try Self.nextChangeVersion(db)
            try NotificationRecord.update(notification, db)
            try Self.countBadge(from: before, to: notification, db)
            try Self.enqueue(planner, notification, .deleted, now: now.canonical, db)
            return notification
        }
    }

    /// Applies a device's read / action state change (by hub ID, else by `appNotificationId`).
    ///
    /// A change that sets nothing new returns the stored notification unchanged (no new version,
    /// no taps). Otherwise the notification gets a new change version and the planned taps (the
    /// user's endpoints but `exceptEndpoint`) are enqueued.
    public func updateState(_ change: StateChange) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(change)
        return try await write { db in
            guard var notification = try Self.findNotification(db, change.key, id: change.id) else { return nil }
            let readChanges = change.readState.map { $0 != notification.readState } ?? false
            let actionChanges = change.userActionState.map { $0 != notification.userActionState } ?? false
            guard readChanges || actionChanges else { return notification }
            let before = notification
            if let readState = change.readState { notification.readState = readState }
            if let userActionState = change.userActionState { notification.userActionState = userActionState }
            notification.lastModifiedDateTime = change.now.canonical
            notification.changeVersion = try Self.nextChangeVersion(db)
            try NotificationRecord.update(notification, db)
            try Self.countBadge(from: before, to: notification, db)
            try Self.noteWhoChanged(
                db, change, read: readChanges && notification.readState == .read,
                dismissed: actionChanges && notification.userActionState == .dismissed)
            try Self.enqueue(
                change.planner, notification, .stateChanged(except: change.exceptEndpoint), now: change.now.canonical,
                db)
            return notification
        }
    }

    /// One notification of the feed, by hub ID, else by `appNotificationId`; tombstones included.
    public func notification(_ key: FeedKey, id: String) async throws -> UserNotification? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await read { db in try Self.findNotification(db, key, id: id) }
    }

    /// The user's notifications matching `filter`, newest first (created, then change version),
    /// at most `filter.limit`.
    public func history(_ key: FeedKey, filter: HistoryFilter) async throws -> [UserNotification] {
        try Identifier.checkBeforeStoring(key)
        guard filter.limit > 0 else { return [] }
        return try await read { db in
            var sql = "SELECT \(NotificationRecord.selection) FROM notification WHERE appId = ? AND userId = ?"
            var arguments: StatementArguments = [key.appId, key.userId]
            if let readState = filter.readState {
                sql += " AND readState = ?"
                arguments += [readState.rawValue]
            }
            if let userActionState = filter.userActionState {
                sql += " AND userActionState = ?"
                arguments += [userActionState.rawValue]
            }
            if let status = filter.status, let asOf = filter.asOf?.storedSeconds {
                // Exact expiry at read time: an active row past its expiration counts as expired.
                switch status {
                case .active:
                    sql += " AND status = 'active' AND expirationDateTime > ?"
                    arguments += [asOf]
                case .expired:
                    sql += " AND (status = 'expired' OR (status = 'active' AND expirationDateTime <= ?))"
                    arguments += [asOf]
                default:
                    sql += " AND status = ?"
                    arguments += [status.rawValue]
                }
            } else if let status = filter.status {
                sql += " AND status = ?"
                arguments += [status.rawValue]
            }
            if let platform = filter.platform {
                // targetPolicy is `{"platformTypes":[…]}`; an empty list targets every platform.
                sql += """
                     AND (json_array_length(targetPolicy, '$.platformTypes') = 0
                        OR EXISTS (SELECT 1 FROM json_each(targetPolicy, '$.platformTypes') WHERE value = ?))
                    """
                arguments += [platform.rawValue]
            }
            sql += " ORDER BY createdDateTime DESC, changeVersion DESC LIMIT ?"
            arguments += [filter.limit]
            return try NotificationRecord.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map(
                \.notification)
        }
    }

    /// The changes of the feed after `version`, oldest first, at most `limit` (tombstones included).
    /// `hasMore` tells whether later changes exist; `version` is the last change's, or `version`
    /// itself when there is none.
    public func feed(_ key: FeedKey, after version: Int64, limit: Int) async throws -> FeedPage {
        try Identifier.checkBeforeStoring(key)
        let pageSize = min(max(limit, 0), Int(Int32.max))
        return try await read { db in
            let rows = try NotificationRecord.fetchAll(
                db.cachedStatement(
                    sql: NotificationRecord.feedQuery),
                arguments: [key.appId, key.userId, version, pageSize + 1])
            let changes = rows.prefix(pageSize).map(\.notification)
            return FeedPage(
                changes: changes, version: changes.last?.changeVersion ?? version, hasMore: rows.count > changes.count)
        }
    }

    /// Releases scheduled notifications whose `scheduledDateTime <= now` (active, a new version
    /// and the planned deliveries each, as a publish), then expires active notifications whose
    /// `expirationDateTime <= now` (a new version and the planned taps each), deletes tombstones
    /// last modified before `purgeBefore`, deletes deliveries finished before `purgeBefore` whose
    /// notification expired before it or is gone, and statistics buckets older than their
    /// resolution's retention.
    ///
    /// - Returns: the feeds that got a new change version.
    public func sweep(now: Date, purgeBefore: Date, planner: DeliveryPlanner) async throws -> Set<FeedKey> {
        try await write { db in
            let now = now.canonical
            // Releases first: a notification released and expired at once gets both changes.
            var changed = try Self.changeDue(
                """
                SELECT \(NotificationRecord.selection) FROM notification INDEXED BY notification_scheduled
                WHERE status = 'scheduled' AND scheduledDateTime <= ? ORDER BY changeVersion
                """, now: now, to: .active, planner: planner, db
            ) { .published(mode: $0.deliveryMode ?? .shoulderTap) }
            changed.formUnion(
                try Self.changeDue(
                    """
                    SELECT \(NotificationRecord.selection) FROM notification
                    WHERE status = 'active' AND expirationDateTime <= ? ORDER BY changeVersion
                    """, now: now, to: .expired, planner: planner, db
                ) { _ in .expired })
            try db.cachedStatement(
                sql: """
                    DELETE FROM notification WHERE status <> 'active' AND status <> 'scheduled'
                        AND lastModifiedDateTime < ?
                    """
            ).execute(arguments: [purgeBefore.storedSeconds])
            // Receipts outlive their notification by the retention.
            try db.cachedStatement(sql: "DELETE FROM delivery WHERE \(Self.purgeableSQL)")
                .execute(arguments: [purgeBefore.storedSeconds])
            try Self.purgeStatistics(now: now, db)
            return changed
        }
    }
}

// MARK: - Helpers

extension SQLiteStore {
    /// The finished deliveries the sweep purges (``OutboxMachine/purgeableSQL(_:before:notificationExpiringFrom:)``),
    /// the retention's cut bound as `?1`.
    static let purgeableSQL = OutboxMachine.purgeableSQL(
        \.rawValue, before: "?1", notificationExpiringFrom: notificationRow)

    /// The notification of the row of `delivery` if it expires at or after `cut`.
    private static func notificationRow(expiringFrom cut: String) -> String {
        """
        SELECT 1 FROM notification n
        WHERE n.appId = delivery.appId AND n.userId = delivery.userId AND n.id = delivery.notificationId
            AND n.expirationDateTime >= \(cut)
        """
    }

    /// Gives each notification `query` selects (with `now` as its argument) the status `status`, a
    /// new version and the deliveries `change` plans for it.
    /// - Returns: the feeds changed.
    static func changeDue(
        _ query: String, now: Date, to status: NotificationStatus, planner: DeliveryPlanner, _ db: Database,
        change: (UserNotification) -> DeliveryPlanner.Change
    ) throws -> Set<FeedKey> {
        var changed = Set<FeedKey>()
        for record in try NotificationRecord.fetchAll(db.cachedStatement(sql: query), arguments: [now.storedSeconds]) {
            var notification = record.notification
            notification.status = status
            notification.lastModifiedDateTime = now
            notification.changeVersion = try nextChangeVersion(db)
            try NotificationRecord.update(notification, db, published: status == .active)
            try countBadge(from: record.notification, to: notification, db)
            try enqueue(planner, notification, change(notification), now: now, db)
            changed.insert(FeedKey(appId: notification.appId, userId: notification.userId))
        }
        return changed
    }

    static func fetchNotification(_ db: Database, _ key: FeedKey, id: String) throws -> UserNotification? {
        try NotificationRecord.fetchOne(
            db.cachedStatement(
                sql: NotificationRecord.byIdQuery),
            arguments: [key.appId, key.userId, id]
        )?.notification
    }

    static func fetchNotification(
        _ db: Database, _ key: FeedKey, appNotificationId: String
    ) throws -> UserNotification? {
        try NotificationRecord.fetchOne(
            db.cachedStatement(
                sql: NotificationRecord.byAppNotificationIdQuery),
            arguments: [key.appId, key.userId, appNotificationId]
        )?.notification
    }

    /// By hub ID, else by `appNotificationId`.
    static func findNotification(_ db: Database, _ key: FeedKey, id: String) throws -> UserNotification? {
        try fetchNotification(db, key, id: id) ?? fetchNotification(db, key, appNotificationId: id)
    }

    /// The earliest `scheduledDateTime` of a notification still scheduled, if any.
    public func nextScheduledRelease() async throws -> Date? {
        try await read { db in
            try Double.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT min(scheduledDateTime) FROM notification INDEXED BY notification_scheduled
                        WHERE status = 'scheduled'
                        """)
            ).map(Date.init(storedSeconds:))
        }
    }

    /// `notification` with every time as it reads back from the database.
    static func canonical(_ notification: UserNotification) -> UserNotification {
        var copy = notification
        copy.scheduledDateTime = copy.scheduledDateTime?.canonical
        copy.expirationDateTime = copy.expirationDateTime.canonical
        copy.createdDateTime = copy.createdDateTime.canonical
        copy.lastModifiedDateTime = copy.lastModifiedDateTime.canonical
        return copy
    }
}
