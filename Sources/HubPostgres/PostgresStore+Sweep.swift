public import Foundation
public import HubCore
import Logging
import PostgresNIO

// The expiry sweep.
extension PostgresStore {
    /// Releases scheduled notifications whose `scheduledDateTime <= now` (active, a new version
    /// each, and the deliveries `planner` plans for a publish), expires active notifications whose
    /// `expirationDateTime <= now` (a new version each, and the taps `planner` plans for their
    /// user's endpoints), deletes tombstones last modified before `purgeBefore`, retires finished
    /// deliveries by partitions (`retireFinished(now:purgeBefore:)`: those finished before
    /// `purgeBefore` whose notification expired before it leave when their partition is dropped),
    /// and deletes statistics buckets older than their resolution's retention before `now`.
    ///
    /// Release and expiry run in batches of at most ``sweepBatch`` feeds, one transaction each, with those
    /// feeds locked (see `PostgresStore+Versions.swift`): a sweep after a broadcast to 100 000
    /// users must not hold 100 000 advisory locks at once. Each batch is complete on its own
    /// (a notification's expiry commits together with its taps). The purge of tombstones follows,
    /// in statements of at most ``purgeBatch`` rows.
    ///
    /// - Returns: the feeds that got a new change version.
    public func sweep(now: Date, purgeBefore: Date, planner: DeliveryPlanner) async throws -> Set<FeedKey> {
        var changed = Set<FeedKey>()
        for change in [TimedChange.release, .expire] {
            while true {
                let batch = try await transaction { db in
                    try await Self.changeBatch(change, now: now, planner: planner, db)
                }
                changed.formUnion(batch.changed)
                if batch.locked < Self.sweepBatch { break }
            }
        }
        // Purged in batches: each statement stays well within the statement timeout, however
        // much piled up.
        while try await purge(
            """
            WITH purged AS (
                DELETE FROM hub_notification WHERE (app_id, user_id, id) IN (
                    SELECT app_id, user_id, id FROM hub_notification
                    WHERE status <> 'active' AND status <> 'scheduled' AND last_modified_date_time < \(purgeBefore)
                    LIMIT \(Self.purgeBatch))
                RETURNING 1
            )
            SELECT count(*) FROM purged
            """) == Self.purgeBatch
        {}
        try await retireFinished(now: now, purgeBefore: purgeBefore)
        try await purgeStatistics(now: now)
        return changed
    }

    /// Rows one purge statement deletes at most.
    static let purgeBatch = 5_000

    /// Runs one purge statement.
    /// - Returns: how many rows it deleted.
    private func purge(_ statement: PostgresQuery) async throws -> Int {
        try await rows(statement).first?.decode(Int.self) ?? 0
    }

    /// What the sweep does to the notifications whose time came.
    enum TimedChange {
        /// Scheduled ones whose `scheduled_date_time` passed become active, as a publish.
        case release
        /// Active ones whose `expiration_date_time` passed become expired.
        case expire

        /// The status it changes, the time column it compares, the status it sets (SQL literals), and
        /// what `published_version` becomes (a release is a publish).
        var sql: (from: String, time: String, to: String, publishedVersion: String) {
            switch self {
            case .release: ("'scheduled'", "scheduled_date_time", "'active'", "NULL")
            case .expire:
                ("'active'", "expiration_date_time", "'expired'", "COALESCE(n.published_version, n.change_version)")
            }
        }

        /// The status it changes.
        var status: NotificationStatus {
            switch self {
            case .release: .scheduled
            case .expire: .active
            }
        }

        func planned(for notification: UserNotification) -> DeliveryPlanner.Change {
            switch self {
            case .release: .published(mode: notification.deliveryMode ?? .shoulderTap)
            case .expire: .expired
            }
        }
    }

    /// Applies `change` to the due notifications of up to ``sweepBatch`` feeds and enqueues their
    /// deliveries.
    /// - Returns: how many feeds it locked, and those it changed (fewer when another instance's
    ///   sweep changed some first).
    private static func changeBatch(
        _ change: TimedChange, now: Date, planner: DeliveryPlanner, _ db: Session
    ) async throws -> (locked: Int, changed: Set<FeedKey>) {
        let sql = change.sql
        let feeds = try await db.rows(
            """
            SELECT DISTINCT app_id COLLATE "C" AS app_id, user_id COLLATE "C" AS user_id FROM hub_notification
            WHERE status = \(unescaped: sql.from) AND \(unescaped: sql.time) <= \(now)
            ORDER BY 1, 2 LIMIT \(sweepBatch)
            """
        ).map { row in
            let (appId, userId) = try row.decode((String, String).self)
            return FeedKey(appId: appId, userId: userId)
        }
        guard !feeds.isEmpty else { return (0, []) }
        try await lockFeeds(feeds, on: db)
        // A new statement, so it sees what the previous holders of the locks committed. Each
        // changed notification takes a version, in the order of their previous versions, as in
        // every store (PostgreSQL evaluates `nextval` in the select list after the sort).
        let expired = try await db.rows(
            """
            WITH numbered AS (
                SELECT n.app_id, n.user_id, n.id, nextval('hub_change_version') AS version
                FROM hub_notification n
                JOIN unnest(\(feeds.map(\.appId))::text[], \(feeds.map(\.userId))::text[]) AS f(app_id, user_id)
                    ON n.app_id = f.app_id AND n.user_id = f.user_id
                WHERE n.status = \(unescaped: sql.from) AND n.\(unescaped: sql.time) <= \(now)
                ORDER BY n.change_version
            )
            UPDATE hub_notification n
            SET status = \(unescaped: sql.to), last_modified_date_time = \(now), change_version = x.version,
                published_version = \(unescaped: sql.publishedVersion)
            FROM numbered x
            WHERE n.app_id = x.app_id AND n.user_id = x.user_id AND n.id = x.id
            RETURNING \(unescaped: qualified(NotificationColumns.list, "n"))
            """
        ).map { try UserNotification(row: $0) }
        guard !expired.isEmpty else { return (feeds.count, []) }
        // Each row was in the status the query selected, as it is now otherwise.
        try await countBadges(
            expired.map { after in
                var before = after
                before.status = change.status
                return (before, after)
            }, db)
        let changed = Set(expired.map { FeedKey(appId: $0.appId, userId: $0.userId) })
        // The endpoints of the changed feeds, every state: the planner decides who is tapped.
        var endpoints: [FeedKey: [Endpoint]] = [:]
        for row in try await db.rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE (app_id, user_id) IN (
                SELECT * FROM unnest(\(changed.map(\.appId))::text[], \(changed.map(\.userId))::text[]))
            ORDER BY app_id, user_id, id COLLATE "C"
            """)
        {
            let endpoint = try Endpoint(row: row)
            endpoints[FeedKey(appId: endpoint.appId, userId: endpoint.userId), default: []].append(endpoint)
        }
        // One plan per changed notification; taps to one endpoint merge into one that names the
        // newest changed notification, with the highest priority among them.
        var rows: [OutboxRow] = []
        for notification in expired {
            let key = FeedKey(appId: notification.appId, userId: notification.userId)
            rows += OutboxMachine.creationOrder(
                planner.plan(
                    notification, change.planned(for: notification), endpoints: endpoints[key] ?? [], now: now)
            )
            .map { OutboxRow($0, of: notification) }
        }
        try await enqueue(rows, now: now, on: db)
        return (feeds.count, changed)
    }

    /// The earliest `scheduled_date_time` of a notification still scheduled, if any.
    public func nextScheduledRelease() async throws -> Date? {
        try await rows(
            "SELECT min(scheduled_date_time) FROM hub_notification WHERE status = 'scheduled'"
        ).first?.decode(Date?.self)
    }
}
