import Foundation
import HubCore
import PostgresNIO

// The statements of a batch of publishes (`PostgresStore+Publish.swift`). Each takes one array
// per column, one element per publish (or per delivery row), so that a batch of any size is one
// prepared statement. postgres-nio has no arrays with NULL elements: a column that may be NULL
// goes with a `has_…` array of booleans.
extension PostgresStore {
    /// Locks the feeds of a batch of publishes and reads what each publish depends on, in one
    /// round trip: a call of ``lockAndReadFunction`` (migration 13), whose `VOLATILE` body takes
    /// the locks and then runs ``readForPublishQuery(apps:users:appNotificationIds:)`` in a
    /// snapshot of its own, taken after the locks (at READ COMMITTED a volatile function's
    /// statements each take a fresh snapshot; one statement that locked and read would read a
    /// snapshot taken before its locks, missing what the feeds' previous holders committed
    /// meanwhile — see `PostgresStore+Versions.swift`). `$1`: ``feedLockSpace``; `$2`, `$3`: the
    /// feeds in the sweep's order; `$4` … `$6`: the publishes' apps, users and
    /// `appNotificationId`s. Returns ``ReadForPublish``'s rows, with the notification as
    /// ``NotificationColumns/list`` and the endpoint as ``EndpointColumns/joined``.
    enum LockAndReadForPublish: NamedStatement {
        static let name = "hub_lock_and_read_for_publishes"
        static let sql = """
            SELECT r.job, \(aliased(NotificationColumns.list, table: "(r.notification)", prefix: "")),
                \(aliased(EndpointColumns.list, table: "(r.endpoint)", prefix: EndpointColumns.Names.joined.prefix)),
                r.waiting_tap
            FROM hub_lock_and_read_for_publishes($1::integer, $2::text[], $3::text[], $4::text[], $5::text[],
                $6::text[]) AS r
            ORDER BY r.job, (r.endpoint).id COLLATE "C"
            """
    }

    /// Version 13: ``lockAndReadFunction``, so that a batch of publishes locks its feeds and reads
    /// in one round trip instead of two (five round trips a batch become four). The function
    /// returns rows of `hub_notification` and `hub_endpoint`: a later migration that replaces
    /// either table (rather than altering it) must drop the function first and create it again.
    static let schemaV13 = [lockAndReadFunction]

    /// The function ``LockAndReadForPublish`` calls: locks the feeds `lock_apps`/`lock_users` in
    /// the order given, then returns ``readForPublishQuery(apps:users:appNotificationIds:)``'s rows.
    /// Its statements keep one generic plan per connection (`plan_cache_mode`): with the arrays'
    /// values a custom plan looks cheaper, so PostgreSQL planned the read again on every call
    /// (~0.4 ms of the server's time a batch); the generic plan looks every row up by key
    /// (`GenericPlanTests`).
    static let lockAndReadFunction = """
        CREATE FUNCTION hub_lock_and_read_for_publishes(lock_space integer, lock_apps text[], lock_users text[],
            apps text[], users text[], app_notification_ids text[])
        RETURNS TABLE (job bigint, notification hub_notification, endpoint hub_endpoint, waiting_tap boolean)
        LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $function$
        BEGIN
            PERFORM pg_advisory_xact_lock(lock_space, hashtext(f.app_id || E'\\n' || f.user_id))
            FROM unnest(lock_apps, lock_users) WITH ORDINALITY AS f(app_id, user_id, position)
            ORDER BY f.position;
            RETURN QUERY
            \(readForPublishQuery(apps: "apps", users: "users", appNotificationIds: "app_notification_ids"));
        END
        $function$
        """

    /// Per publish `job` (1-based): the notification with its `appNotificationId` (if any) and
    /// the user's endpoints (every state, by ID), each with whether a tap waits for it — one row
    /// per endpoint, or one row with a NULL endpoint; the notification and the endpoint as
    /// whole rows. Both lookups are `LATERAL` subqueries that cannot be flattened into joins
    /// (`LIMIT 1`, `OFFSET 0`), so that each is an index lookup per publish whatever the planner
    /// believes of the tables' sizes: a generic plan made while `hub_notification` looked empty
    /// hashed the whole table for every batch (~10 ms a batch at 9,000 rows, measured with
    /// auto_explain); on empty tables the endpoints were hashed the same way (`GenericPlanTests`).
    ///
    /// Migration 13's function body is built from it (and from `OutboxMachine.waitingTapSQL`): a
    /// database keeps the body it was migrated with, so a change of either needs a new migration
    /// that creates the function again.
    static func readForPublishQuery(apps: String, users: String, appNotificationIds: String) -> String {
        """
        SELECT k.position, x.n, y.e,
            EXISTS (
                SELECT FROM hub_delivery d
                WHERE d.app_id = (y.e).app_id AND d.user_id = (y.e).user_id AND d.endpoint_id = (y.e).id
                    AND \(OutboxMachine.waitingTapSQL { "d.\(DeliveryColumns.name($0))" })
            )
        FROM unnest(\(apps), \(users), \(appNotificationIds)) WITH ORDINALITY
            AS k(app_id, user_id, app_notification_id, position)
        LEFT JOIN LATERAL (
            SELECT n FROM hub_notification n
            WHERE n.app_id = k.app_id AND n.user_id = k.user_id AND n.app_notification_id = k.app_notification_id
            LIMIT 1
        ) AS x ON true
        LEFT JOIN LATERAL (
            SELECT e FROM hub_endpoint e WHERE e.app_id = k.app_id AND e.user_id = k.user_id OFFSET 0
        ) AS y ON true
        ORDER BY k.position, (y.e).id COLLATE "C"
        """
    }

    /// The function's query as a statement of its own (`$1` … `$3`: apps, users,
    /// `appNotificationId`s), whose generic plan `GenericPlanTests` checks.
    enum ReadForPublish {
        static let sql = readForPublishQuery(
            apps: "$1::text[]", users: "$2::text[]", appNotificationIds: "$3::text[]")
    }

    /// Upserts the notifications (`$1` … `$25`, one element per publish, with its `now`, urgency
    /// and hand-off) with the next change versions and writes their deliveries (`$26` … `$32`,
    /// one element per row, `$26` the publish's position) through one upsert in the order bound
    /// (rows that may merge, `merges`, through `ON CONFLICT`; the others never conflict), leased
    /// when `hand` (merged taps to the batch's hand-off owner, `$33` … `$35`, in a second
    /// upsert), and moves the badge counters (`$39` … `$42`, one element per counter: `BadgeCount`'s
    /// changes of the batch, merged per counter). Returns a row per delivery
    /// written (with `handed` and `due`), each with its publish's position as `job` and the stored
    /// notification as `n_…` columns; one row with NULL delivery columns for a publish without.
    enum WriteForPublish: NamedStatement {
        static let name = "hub_write_for_publishes"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[],
                    $7::text[], $8::text[], $9::text[], $10::bigint[], $11::boolean[], $12::timestamptz[],
                    $13::bigint[], $14::boolean[], $15::text[], $16::boolean[], $17::timestamptz[],
                    $18::timestamptz[], $19::text[], $20::text[], $21::text[], $22::timestamptz[], $23::smallint[],
                    $24::text[], $25::timestamptz[], $36::text[], $37::timestamptz[], $38::boolean[])
                    WITH ORDINALITY AS i(app_id, user_id, id, app_notification_id, group_name, has_group, priority,
                        payload, target_policy, display_time_to_live, has_ttl, expiration_date_time,
                        fallback_timeout_seconds, has_fallback, delivery_mode, has_mode, created_date_time,
                        last_modified_date_time, read_state, user_action_state, status, now, urgency, lease_owner,
                        lease_until, fallback_details, scheduled_date_time, has_schedule, position)
            ), saved AS (
                INSERT INTO hub_notification (\(NotificationColumns.list))
                SELECT app_id, user_id, id, app_notification_id, CASE WHEN has_group THEN group_name END, priority,
                    payload::jsonb, target_policy::jsonb, CASE WHEN has_ttl THEN display_time_to_live END,
                    expiration_date_time, CASE WHEN has_fallback THEN fallback_timeout_seconds END,
                    CASE WHEN has_mode THEN delivery_mode END, created_date_time, last_modified_date_time,
                    read_state, user_action_state, status, nextval('hub_change_version'),
                    NULLIF(fallback_details, '')::jsonb, CASE WHEN has_schedule THEN scheduled_date_time END
                FROM input ORDER BY position
                ON CONFLICT (app_id, user_id, id) DO UPDATE SET \(NotificationColumns.replace(published: true))
                RETURNING \(NotificationColumns.list)
            ), planned AS (
                SELECT p.endpoint_id, p.transport, p.kind, p.due_at, p.merges, p.hand, i.app_id, i.user_id,
                    s.id AS notification_id, s.change_version, i.priority, i.urgency, i.now,
                    NULLIF(i.lease_owner, '') AS lease_owner, i.lease_until, p.ord
                FROM unnest($26::bigint[], $27::text[], $28::text[], $29::text[], $30::timestamptz[],
                    $31::boolean[], $32::boolean[]) WITH ORDINALITY
                    AS p(position, endpoint_id, transport, kind, due_at, merges, hand, ord)
                JOIN input i ON i.position = p.position
                JOIN saved s ON s.app_id = i.app_id AND s.user_id = i.user_id AND s.id = i.id
            ), merged AS (
                \(merge(hand: false))
            ), merged_and_handed AS (
                \(merge(hand: true))
            ), written AS (
                SELECT * FROM merged UNION ALL SELECT * FROM merged_and_handed
            ), badges AS (
                INSERT INTO hub_badge_counter (app_id, user_id, scope, unread)
                SELECT * FROM unnest($39::text[], $40::text[], $41::text[], $42::bigint[])
                ON CONFLICT (app_id, user_id, scope) DO UPDATE SET unread = hub_badge_counter.unread + excluded.unread
            )
            SELECT i.position AS job, w.*, w.due_at <= i.now AS due, \(NotificationColumns.joined)
            FROM saved n
            JOIN input i ON i.app_id = n.app_id AND i.user_id = n.user_id AND i.id = n.id
            LEFT JOIN written w ON w.app_id = n.app_id AND w.user_id = n.user_id AND w.notification_id = n.id
            """

        /// Without `hand`, every row but the handed-off taps that merge, in the order the rows
        /// were bound (``HubCore/OutboxMachine/creationOrder(_:)``, so new rows are numbered in
        /// it): taps that may merge into their endpoint's waiting one, inserted unleased (a
        /// leased row is outside the index the conflict is found by), and the rest inserted,
        /// leased when handed off (they never conflict). With `hand`, the handed-off taps that
        /// merge: the merged tap is leased to the batch's hand-off owner `$33` until `$34`,
        /// claimed at `$35` (they merge into rows that exist, so they number nothing).
        private static func merge(hand: Bool) -> String {
            """
            INSERT INTO hub_delivery_pending AS d (\(insertedColumns))
            SELECT \(hand ? unleasedValues : insertedValues) FROM planned
            WHERE \(hand ? "merges AND hand" : "NOT (merges AND hand)") ORDER BY ord
            ON CONFLICT (app_id, user_id, endpoint_id) WHERE \(DeliveryColumns.waitingTap)
            DO UPDATE SET \(DeliveryColumns.tapMerge)\(hand ? ",\n    " + leaseMerged : "")
            RETURNING \(qualified(DeliveryColumns.list, "d")), d.lease_owner IS NOT NULL AS handed
            """
        }
        private static let leaseMerged = OutboxMachine.leaseSQL(
            target: DeliveryColumns.name, current: { "d.\(DeliveryColumns.name($0))" }, owner: "$33::text",
            until: "$34::timestamptz", now: "$35::timestamptz")

        /// The columns a planned row is inserted with, and their values from `planned`: a row
        /// handed off is leased (``HubCore/OutboxMachine/attempts(afterLease:)``, claimed now).
        private static let insertedColumns = """
            app_id, user_id, endpoint_id, transport, kind, notification_id, change_version, priority, urgency, state,
            created_at, due_at, lease_owner, lease_until, claimed_at, attempts
            """
        private static let unleasedValues = """
            app_id, user_id, endpoint_id, transport, kind, notification_id, change_version, priority, urgency,
            'pending', now, due_at, NULL, NULL, NULL, 0
            """
        private static let insertedValues = """
            app_id, user_id, endpoint_id, transport, kind, notification_id, change_version, priority, urgency,
            'pending', now, due_at, CASE WHEN hand THEN lease_owner END, CASE WHEN hand THEN lease_until END,
            CASE WHEN hand THEN now END, CASE WHEN hand THEN \(OutboxMachine.attempts(afterLease: 0)) ELSE 0 END
            """

        /// The statement's values for `writes`.
        static func bindings(_ writes: [PublishWrite]) throws -> PostgresBindings {
            let encoder = JSONEncoder()
            let notifications = writes.map(\.notification)
            var binds = PostgresBindings(capacity: 42)
            binds.append(notifications.map(\.appId))
            binds.append(notifications.map(\.userId))
            binds.append(notifications.map(\.id))
            binds.append(notifications.map(\.appNotificationId))
            binds.append(notifications.map { $0.groupName ?? "" })
            binds.append(notifications.map { $0.groupName != nil })
            binds.append(notifications.map(\.priority.rawValue))
            binds.append(notifications.map(\.payload.storedJSON))
            binds.append(
                try notifications.map {
                    // What almost every publish has (every platform), without an encoder.
                    $0.targetPolicy.platformTypes.isEmpty
                        ? #"{"platformTypes":[]}"#
                        : String(decoding: try encoder.encode($0.targetPolicy), as: UTF8.self)
                })
            binds.append(notifications.map { $0.displayTimeToLive ?? 0 })
            binds.append(notifications.map { $0.displayTimeToLive != nil })
            binds.append(notifications.map(\.expirationDateTime))
            binds.append(notifications.map { $0.fallbackPolicy?.timeoutSeconds ?? 0 })
            binds.append(notifications.map { $0.fallbackPolicy != nil })
            binds.append(notifications.map { $0.deliveryMode?.rawValue ?? "" })
            binds.append(notifications.map { $0.deliveryMode != nil })
            binds.append(notifications.map(\.createdDateTime))
            binds.append(notifications.map(\.lastModifiedDateTime))
            binds.append(notifications.map(\.readState.rawValue))
            binds.append(notifications.map(\.userActionState.rawValue))
            binds.append(notifications.map(\.status.rawValue))
            binds.append(writes.map(\.request.now))
            binds.append(notifications.map(\.priority.urgency))
            binds.append(writes.map { $0.request.handOff?.owner ?? "" })
            binds.append(writes.map { $0.request.handOff?.leaseUntil ?? $0.request.now })
            var positions: [Int64] = []
            var rows: [OutboxRow] = []
            var merges: [Bool] = []
            var hands: [Bool] = []
            for (index, write) in writes.enumerated() {
                let handed = write.hands
                for (row, hand) in zip(write.rows, handed) {
                    positions.append(Int64(index + 1))
                    rows.append(row)
                    merges.append(
                        OutboxMachine.mergesOnWrite(
                            coalesces: row.coalesces, handedOff: hand,
                            tapWaits: write.read.waitingTaps.contains(row.endpointId)))
                    hands.append(hand)
                }
            }
            binds.append(positions)
            binds.append(rows.map(\.endpointId))
            binds.append(rows.map(\.transport))
            binds.append(rows.map(\.kind))
            binds.append(rows.map(\.dueAt))
            binds.append(merges)
            binds.append(hands)
            // The merged taps' lease: one owner per batch (`publishBatch` makes sure), the
            // earliest deadline and the latest time of the batch's publishes.
            let handOffs = writes.compactMap(\.request.handOff)
            binds.append(handOffs.first?.owner ?? "")
            binds.append(handOffs.map(\.leaseUntil).min() ?? writes[0].request.now)
            binds.append(writes.map(\.request.now).max() ?? writes[0].request.now)
            // `$36`: the fallback policies' details ('' for none), after the rows' arrays.
            binds.append(
                try notifications.map { notification in
                    guard let policy = notification.fallbackPolicy, policy.hasDetails else { return "" }
                    return String(decoding: try encoder.encode(policy), as: UTF8.self)
                })
            // `$37`, `$38`: the scheduled times, and whether there is one.
            binds.append(notifications.map { $0.scheduledDateTime ?? $0.createdDateTime })
            binds.append(notifications.map { $0.scheduledDateTime != nil })
            // `$39` … `$42`: how the batch moves the badge counters, one element per counter
            // (one INSERT … ON CONFLICT may change a row once).
            let badges = BadgeCount.merged(
                writes.flatMap { BadgeCount.changes(from: $0.read.existing, to: $0.notification) })
            binds.append(badges.map(\.appId))
            binds.append(badges.map(\.userId))
            binds.append(badges.map(\.scope))
            binds.append(badges.map { Int64($0.delta) })
            return binds
        }
    }
}
