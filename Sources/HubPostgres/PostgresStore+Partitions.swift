import Foundation
import HubCore
import Logging
import PostgresNIO

// Retention by partitions (docs/postgresql.md, "Retention").
//
// `hub_delivery` is partitioned by `state`: `hub_delivery_pending` holds the outbox (every hot
// statement reads `state = 'pending'` and touches only it), `hub_delivery_finished` the finished
// rows, partitioned in turn by `purge_after` in time ranges of
// ``PostgresStore/Configuration/retentionPartition``. A row's `purge_after` is set when it
// finishes: the later of its finish and its notification's expiry (a receipt reads a
// notification's deliveries while the notification lives), so a partition holds only rows that
// may leave together, and the sweep drops it once its whole range is past the retention — no
// `DELETE`, no scan of the rows that must stay. A row finishing for a time no partition covers
// yet waits in `hub_delivery_finished_default` (indexed by `purge_after`) and is moved when its
// partition is created, or deleted from there once past the retention.
extension PostgresStore {
    /// Version 12: retention by partitions. Converts `hub_delivery` in place (one transaction):
    /// the old table is renamed, the partitioned one created under its name, the rows copied
    /// (finished ones with their `purge_after`), the old table dropped and the indexes created
    /// again on the partition they serve. `hub_webhook_event` becomes three columns of the outbox
    /// row (`event_id`, `event_type`, `event_body`): a foreign key cannot point into a partitioned
    /// table by `id` alone, and an event leaves with its row when that row's partition goes.
    /// IDs continue from the old identity (`hub_delivery_ids`, owned by `hub_delivery.id`).
    static let schemaV12 = [
        "ALTER TABLE hub_delivery RENAME TO hub_delivery_v11",
        // Its name is the new finished partition's.
        "DROP INDEX hub_delivery_finished",
        "CREATE SEQUENCE hub_delivery_ids AS bigint",
        "SELECT setval('hub_delivery_ids', last_value, is_called) FROM hub_delivery_id_seq",
        """
        CREATE TABLE hub_delivery (
            id bigint NOT NULL DEFAULT nextval('hub_delivery_ids'),
            app_id text NOT NULL,
            user_id text NOT NULL,
            endpoint_id text NOT NULL,
            transport text NOT NULL,
            kind text NOT NULL,
            notification_id text,
            change_version bigint NOT NULL,
            priority text NOT NULL,
            urgency smallint NOT NULL,
            state text NOT NULL CHECK (state IN ('pending', 'finished')),
            lease_owner text,
            lease_until timestamptz,
            claimed_at timestamptz,
            attempts integer NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL,
            due_at timestamptz NOT NULL,
            last_error text,
            result text,
            detail text,
            finished_at timestamptz,
            suspended_at timestamptz,
            suspended_reason text,
            first_sent_at timestamptz,
            provider_message_id text,
            event_id text,
            event_type text,
            event_body text,
            purge_after timestamptz,
            CONSTRAINT hub_delivery_purge_after CHECK (state = 'pending' OR purge_after IS NOT NULL)
        ) PARTITION BY LIST (state)
        """,
        "ALTER SEQUENCE hub_delivery_ids OWNED BY hub_delivery.id",
        "CREATE TABLE hub_delivery_pending PARTITION OF hub_delivery (PRIMARY KEY (id)) FOR VALUES IN ('pending')",
        """
        CREATE TABLE hub_delivery_finished PARTITION OF hub_delivery FOR VALUES IN ('finished')
            PARTITION BY RANGE (purge_after)
        """,
        "CREATE TABLE hub_delivery_finished_default PARTITION OF hub_delivery_finished DEFAULT",
        """
        INSERT INTO hub_delivery (id, app_id, user_id, endpoint_id, transport, kind, notification_id, change_version,
            priority, urgency, state, lease_owner, lease_until, claimed_at, attempts, created_at, due_at, last_error,
            result, detail, finished_at, suspended_at, suspended_reason, first_sent_at, provider_message_id,
            event_id, event_type, event_body, purge_after)
        SELECT d.id, d.app_id, d.user_id, d.endpoint_id, d.transport, d.kind, d.notification_id, d.change_version,
            d.priority, d.urgency, d.state, d.lease_owner, d.lease_until, d.claimed_at, d.attempts, d.created_at,
            d.due_at, d.last_error, d.result, d.detail, d.finished_at, d.suspended_at, d.suspended_reason,
            d.first_sent_at, d.provider_message_id, w.event_id, w.type, w.body,
            CASE WHEN d.state = 'finished' THEN GREATEST(COALESCE(d.finished_at, d.created_at), n.expiration_date_time) END
        FROM hub_delivery_v11 d
        LEFT JOIN hub_webhook_event w ON w.delivery_id = d.id
        LEFT JOIN hub_notification n ON n.app_id = d.app_id AND n.user_id = d.user_id AND n.id = d.notification_id
        """,
        "DROP TABLE hub_webhook_event",
        "DROP TABLE hub_delivery_v11",
        // The pending rows' indexes, as before (schema versions 1, 2, 3, 8), on their partition.
        "CREATE INDEX hub_delivery_due ON hub_delivery_pending (urgency DESC, due_at, id) WHERE state = 'pending'",
        """
        CREATE UNIQUE INDEX hub_delivery_pending_tap ON hub_delivery_pending (app_id, user_id, endpoint_id)
            WHERE state = 'pending' AND kind = 'shoulderTap' AND lease_owner IS NULL
        """,
        """
        CREATE INDEX hub_delivery_endpoint ON hub_delivery_pending (app_id, user_id, endpoint_id)
            WHERE state = 'pending'
        """,
        """
        CREATE INDEX hub_delivery_lane ON hub_delivery_pending (transport, urgency DESC, due_at, id)
            WHERE state = 'pending' AND suspended_at IS NULL
        """,
        """
        CREATE INDEX hub_delivery_suspended ON hub_delivery_pending (app_id, transport)
            WHERE state = 'pending' AND suspended_at IS NOT NULL
        """,
        """
        CREATE INDEX hub_delivery_leased ON hub_delivery_pending (lease_until)
            WHERE state = 'pending' AND lease_owner IS NOT NULL
        """,
        // The finished rows' (versions 9 and 11), on every partition; a finished row by ID; the
        // default partition's purge.
        // (Made on the default partition first, to name it: the partitioned index adopts it.)
        """
        CREATE INDEX hub_delivery_failed_default ON hub_delivery_finished_default (app_id, finished_at)
            WHERE state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp')
        """,
        """
        CREATE INDEX hub_delivery_failed ON hub_delivery_finished (app_id, finished_at)
            WHERE state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp')
        """,
        """
        CREATE INDEX hub_delivery_webhook ON hub_delivery (app_id, endpoint_id, state, finished_at)
            WHERE transport = 'webhooks'
        """,
        "CREATE INDEX hub_delivery_finished_id ON hub_delivery_finished (id)",
        "CREATE INDEX hub_delivery_finished_default_purge ON hub_delivery_finished_default (purge_after)",
    ]

    /// The `purge_after` of the `hub_delivery` row `row` (a table name or alias) that finishes at
    /// `finishedAt` (an SQL expression; in an `UPDATE`, the new value, not the column): the later
    /// of that and its notification's expiry (``notificationExpirySQL(_:)``). Every statement
    /// that finishes a row sets it (the check `hub_delivery_purge_after` refuses a finished row
    /// without one).
    static func purgeAfterSQL(_ row: String, finishedAt: String) -> String {
        "GREATEST(\(finishedAt), \(notificationExpirySQL(row)))"
    }

    /// The expiry of the notification the `hub_delivery` row `row` names; `NULL` when there is
    /// none (`GREATEST` ignores it).
    static func notificationExpirySQL(_ row: String) -> String {
        """
        (SELECT n.expiration_date_time FROM hub_notification n \
        WHERE n.app_id = \(row).app_id AND n.user_id = \(row).user_id AND n.id = \(row).notification_id)
        """
    }

    /// The first key of the partition maintenance's lock.
    static let partitionLockSpace: Int32 = 0x4842_0002

    /// The longest partition maintenance waits for a table lock before it gives up until the
    /// next sweep: attaching and dropping a partition lock `hub_delivery_finished` briefly, and a
    /// waiting lock request holds up every statement queued behind it.
    static let partitionLockTimeout = "1s"

    /// A partition of `hub_delivery_finished`: `purge_after` in [`from`, `to`), as Unix seconds.
    struct FinishedPartition: Hashable, Comparable, Sendable {
        let from: Int64
        let to: Int64

        /// `hub_delivery_finished_<from>_<to>` (`m` for a minus sign).
        var name: String {
            "hub_delivery_finished_\(Self.text(from))_\(Self.text(to))"
        }

        init(from: Int64, to: Int64) {
            self.from = from
            self.to = to
        }

        /// Reads a name made by ``name``; `nil` for any other table (the default partition).
        init?(name: String) {
            let prefix = "hub_delivery_finished_"
            guard name.hasPrefix(prefix) else { return nil }
            let bounds = name.dropFirst(prefix.count).split(separator: "_").map {
                Int64($0.replacingOccurrences(of: "m", with: "-"))
            }
            guard bounds.count == 2, let from = bounds[0], let to = bounds[1], from < to else { return nil }
            self.init(from: from, to: to)
        }

        static func < (a: Self, b: Self) -> Bool { (a.from, a.to) < (b.from, b.to) }

        private static func text(_ value: Int64) -> String {
            value < 0 ? "m\(-value)" : "\(value)"
        }

        func overlaps(_ other: Self) -> Bool { from < other.to && other.from < to }
    }

    /// The partitions of `hub_delivery_finished` but the default one.
    static func finishedPartitions(_ db: Session) async throws -> [FinishedPartition] {
        try await db.rows(
            """
            SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'hub_delivery_finished'::regclass
            """
        ).compactMap { FinishedPartition(name: try $0.decode(String.self)) }.sorted()
    }

    /// The partitions that should exist at `now`: ``Configuration/retentionPartitionsAhead`` of
    /// them from the one holding `now`, aligned to multiples of their span since 1970.
    func wantedPartitions(now: Date) -> [FinishedPartition] {
        let span = max(Int64(configuration.retentionPartition.components.seconds), 1)
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let first = (seconds >= 0 ? seconds / span : (seconds - span + 1) / span) * span
        return (0..<max(configuration.retentionPartitionsAhead, 1)).map { index in
            FinishedPartition(from: first + Int64(index) * span, to: first + Int64(index + 1) * span)
        }
    }

    /// What ``retireFinished(now:purgeBefore:)`` did.
    struct PartitionChanges: Equatable, Sendable {
        var created: [String] = []
        var dropped: [String] = []
        /// Rows deleted from the default partition.
        var purgedFromDefault = 0
    }

    /// The sweep's retention of finished deliveries: creates the partitions missing from
    /// ``wantedPartitions(now:)`` (moving the rows of their range out of the default partition;
    /// a wanted range that overlaps an existing partition, e.g. after the span was changed, is
    /// left to it), drops the partitions whose whole range is before `purgeBefore`, and deletes
    /// the default partition's rows past it. Several instances may sweep at once: changes run
    /// under a transaction-level advisory lock: the new tables in one transaction, their
    /// attachment in another, the drops in a third. A lock not granted within ``partitionLockTimeout`` postpones them to the next
    /// sweep.
    @discardableResult
    func retireFinished(now: Date, purgeBefore: Date) async throws -> PartitionChanges {
        var changes = PartitionChanges()
        let existing = try await withSession { session in try await Self.finishedPartitions(session) }
        let cut = Int64(purgeBefore.timeIntervalSince1970.rounded(.down))
        let missing = wantedPartitions(now: now).filter { wanted in
            wanted.to > cut && !existing.contains { $0.overlaps(wanted) }
        }
        let expired = existing.filter { $0.to <= cut }
        // All of each kind in one transaction: one commit, and the locks taken once.
        if !missing.isEmpty {
            // The tables and their indexes first, with no lock on the partitions (the slow part:
            // new files, synced at commit); then, briefly, attached.
            _ = try await changePartitions { db in
                for partition in missing {
                    try await db.rows(
                        PostgresQuery(
                            unsafeSQL: """
                                CREATE TABLE IF NOT EXISTS "\(partition.name)" (LIKE hub_delivery_finished
                                    INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)
                                """))
                }
                return []
            }
            changes.created = try await changePartitions { db in
                // Holds off statements that would route a finished row meanwhile: routed to the
                // default partition by the partitions they saw, such a row would then violate the
                // default partition's new bounds (SQLSTATE 23514). Readers go on.
                try await db.rows("LOCK TABLE hub_delivery_finished IN SHARE ROW EXCLUSIVE MODE")
                var created: [String] = []
                for partition in missing {
                    if try await Self.attach(partition, db) { created.append(partition.name) }
                }
                return created
            }
        }
        if !expired.isEmpty {
            changes.dropped = try await changePartitions { db in
                var dropped: [String] = []
                for partition in expired {
                    if try await Self.drop(partition, db) { dropped.append(partition.name) }
                }
                return dropped
            }
        }
        while true {
            let deleted =
                try await rows(
                    """
                    WITH purged AS (
                        DELETE FROM hub_delivery_finished_default WHERE id IN (
                            SELECT id FROM hub_delivery_finished_default WHERE purge_after < \(purgeBefore)
                            LIMIT \(Self.purgeBatch))
                        RETURNING 1
                    )
                    SELECT count(*) FROM purged
                    """
                ).first?.decode(Int.self) ?? 0
            changes.purgedFromDefault += deleted
            if deleted < Self.purgeBatch { break }
        }
        return changes
    }

    /// Runs `change` in a transaction under the maintenance lock, with ``partitionLockTimeout``.
    /// - Returns: the partitions `change` changed; none when a lock was not granted in time.
    private func changePartitions(
        _ change: @escaping @Sendable (Session) async throws -> [String]
    ) async throws -> [String] {
        let schema = configuration.schema ?? ""
        do {
            return try await transaction { db in
                try await db.rows("SELECT set_config('lock_timeout', \(Self.partitionLockTimeout), true)")
                try await db.rows("SELECT pg_advisory_xact_lock(\(Self.partitionLockSpace), hashtext(\(schema)))")
                return try await change(db)
            }
        } catch let error as PostgresStoreError where error.sqlState == "55P03" {
            logger.info("a partition change waits for the next sweep: its table is busy")
            return []
        }
    }

    /// Attaches the table made for `partition` (with the indexes of the partitions, so that
    /// attaching builds none), with the default partition's rows of its range.
    /// - Returns: whether it attached it (another instance may have meanwhile).
    private static func attach(_ partition: FinishedPartition, _ db: Session) async throws -> Bool {
        guard !(try await finishedPartitions(db)).contains(where: { $0.overlaps(partition) }) else { return false }
        let name = "\"\(partition.name)\""
        let range = "purge_after >= to_timestamp(\(partition.from)) AND purge_after < to_timestamp(\(partition.to))"
        for statement in [
            """
            WITH moved AS (DELETE FROM hub_delivery_finished_default WHERE \(range) RETURNING *)
            INSERT INTO \(name) SELECT * FROM moved
            """,
            """
            ALTER TABLE hub_delivery_finished ATTACH PARTITION \(name)
                FOR VALUES FROM (to_timestamp(\(partition.from))) TO (to_timestamp(\(partition.to)))
            """,
        ] {
            try await db.rows(PostgresQuery(unsafeSQL: statement))
        }
        return true
    }

    /// Drops `partition`, all of whose rows are past the retention.
    private static func drop(_ partition: FinishedPartition, _ db: Session) async throws -> Bool {
        guard try await finishedPartitions(db).contains(partition) else { return false }
        try await db.rows(PostgresQuery(unsafeSQL: "DROP TABLE \"\(partition.name)\""))
        return true
    }
}
