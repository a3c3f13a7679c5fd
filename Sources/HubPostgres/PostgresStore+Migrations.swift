import Foundation
import HubCore
import Logging
import PostgresNIO

extension PostgresStore {
    /// One step of the schema's history. Never edit a shipped migration: append the next version.
    struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: [String]
    }

    /// The schema's history, oldest first.
    static let migrations: [Migration] = [
        Migration(version: 1, name: "initial schema", statements: schemaV1),
        Migration(version: 2, name: "outbox lanes", statements: schemaV2),
        Migration(version: 3, name: "suspended deliveries", statements: schemaV3),
        Migration(version: 4, name: "fallback details and schedules", statements: schemaV4),
        Migration(version: 5, name: "delivery receipts", statements: schemaV5),
        Migration(version: 6, name: "statistics over time", statements: schemaV6),
        Migration(version: 7, name: "user tags and broadcasts", statements: schemaV7),
        Migration(version: 8, name: "leased deliveries", statements: schemaV8),
        Migration(version: 9, name: "console indexes", statements: schemaV9),
        Migration(version: 10, name: "badge counters", statements: schemaV10),
        Migration(version: 11, name: "webhook events", statements: schemaV11),
        Migration(version: 12, name: "retention by partitions", statements: schemaV12),
        Migration(version: 13, name: "publishes lock and read in one round trip", statements: schemaV13),
        Migration(version: 14, name: "claim indexes without leased rows", statements: schemaV14),
    ]

    /// Creates or upgrades the schema; safe to call on every start, from every instance at once.
    ///
    /// Runs in one transaction on a connection of its own (so it works before ``run()``): takes
    /// the transaction-level advisory lock of this schema (instances starting together wait for
    /// each other here), creates the configured schema and `hub_schema_migrations` if missing,
    /// applies the migrations not recorded there in order, and records them. A database that
    /// records a version this build does not know is refused with `schemaTooNew`.
    public func migrate() async throws {
        try await migrate(through: nil)
    }

    /// ``migrate()``, stopping after version `last` when given (tests that write data as an
    /// older schema held it, then migrate it).
    func migrate(through last: Int?) async throws {
        let schema = configuration.schema
        let logger = self.logger
        try await withDedicatedConnection(role: "migrations") { connection in
            try await Self.inTransaction(connection) { connection in
                try await connection.rows(
                    "SELECT pg_advisory_xact_lock(\(Self.migrationLockSpace), hashtext(\(schema ?? "")))")
                if let schema {
                    // Validated by `Configuration` (lower-case letters, digits, `_`).
                    try await connection.rows("CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)")
                }
                try await connection.rows(
                    """
                    CREATE TABLE IF NOT EXISTS hub_schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """)
                let applied = try await connection.rows("SELECT version FROM hub_schema_migrations")
                    .map { try $0.decode(Int.self) }
                let known = Set(Self.migrations.map(\.version))
                if let unknown = applied.first(where: { !known.contains($0) }) {
                    throw PostgresStoreError(
                        .schemaTooNew,
                        "the database has schema version \(unknown), newer than this build knows; upgrade the hub")
                }
                for migration in Self.migrations
                where !applied.contains(migration.version) && migration.version <= last ?? .max {
                    for statement in migration.statements {
                        try await connection.rows(PostgresQuery(unsafeSQL: statement))
                    }
                    try await connection.rows(
                        "INSERT INTO hub_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))"
                    )
                    logger.info("applied schema migration", metadata: ["version": "\(migration.version)"])
                }
            }
        }
    }

    /// The versions recorded in `hub_schema_migrations`, in order.
    func appliedMigrations() async throws -> [Int] {
        try await rows("SELECT version FROM hub_schema_migrations ORDER BY version").map { try $0.decode(Int.self) }
    }

    /// Drops the configured schema with everything in it: for tests and benchmarks that gave
    /// each run a schema of its own. Refuses when no schema is configured.
    public func dropSchema() async throws {
        guard let schema = configuration.schema else {
            throw PostgresStoreError.invalidConfiguration("dropSchema() needs a configured schema")
        }
        try await withDedicatedConnection(role: "cleanup") { connection in
            try await connection.rows("DROP SCHEMA IF EXISTS \(unescaped: schema) CASCADE")
        }
    }

    /// A random key that every instance on this database shares, created on first use.
    ///
    /// For secrets the instances must agree on but nobody configured, such as the key that signs
    /// feed cursors (a cursor handed out by one instance must verify on another). The first
    /// caller stores `byteCount` random bytes under `name`; later callers, on any instance, get
    /// the same bytes. Works before ``run()`` (it opens a connection of its own); needs
    /// ``migrate()`` first. Never log the result.
    public func sharedKey(named name: String, byteCount: Int = 32) async throws -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let candidate = Data((0..<max(byteCount, 1)).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        return try await withDedicatedConnection(role: "shared keys", statementTimeout: statementDeadline) {
            connection in
            var rows = try await connection.rows(
                """
                WITH created AS (
                    INSERT INTO hub_shared_key (name, value) VALUES (\(name), \(candidate))
                    ON CONFLICT (name) DO NOTHING
                    RETURNING value
                )
                SELECT value FROM created UNION ALL SELECT value FROM hub_shared_key WHERE name = \(name)
                """)
            if rows.isEmpty {
                // Another instance inserted it concurrently; this statement's snapshot predates
                // its commit, the next statement's does not.
                rows = try await connection.rows("SELECT value FROM hub_shared_key WHERE name = \(name)")
            }
            guard let row = rows.first else {
                throw PostgresStoreError(.server, "the shared key '\(name)' could not be stored")
            }
            return [UInt8](try row.decode(Data.self))
        }
    }

    /// The initial schema. Times are `timestamptz` (microseconds); payloads are `jsonb`.
    ///
    /// - `hub_change_version`: the store-wide change counter (see `PostgresStore+Versions.swift`).
    /// - `hub_notification`: keyed by (app, user, id); unique (app, user, appNotificationId); the
    ///   feed reads (app, user, change_version); the sweep reads active ones by expiration and
    ///   tombstones by last modification.
    /// - `hub_endpoint`: keyed by (app, user, id); found by token to move it between users;
    ///   listed by (app, state) for the feedback list.
    /// - `hub_delivery`: the outbox. Claimed in (urgency, due, id) order from the pending rows; at
    ///   most one pending, unleased shoulder tap per endpoint (new taps coalesce into it with
    ///   `ON CONFLICT`); finished rows purged by `finished_at`. No foreign keys: finished rows
    ///   outlive endpoints and notifications (statistics); pending ones are removed explicitly.
    /// - `hub_shared_key`: random keys all instances must share (the feed-cursor key).
    static let schemaV1 = [
        "CREATE SEQUENCE hub_change_version AS bigint",
        """
        CREATE TABLE hub_notification (
            app_id text NOT NULL,
            user_id text NOT NULL,
            id text NOT NULL,
            app_notification_id text NOT NULL,
            group_name text,
            priority text NOT NULL,
            payload jsonb NOT NULL,
            target_policy jsonb NOT NULL,
            display_time_to_live integer,
            expiration_date_time timestamptz NOT NULL,
            fallback_timeout_seconds integer,
            delivery_mode text,
            created_date_time timestamptz NOT NULL,
            last_modified_date_time timestamptz NOT NULL,
            read_state text NOT NULL,
            user_action_state text NOT NULL,
            status text NOT NULL,
            change_version bigint NOT NULL,
            PRIMARY KEY (app_id, user_id, id),
            UNIQUE (app_id, user_id, app_notification_id)
        )
        """,
        "CREATE INDEX hub_notification_feed ON hub_notification (app_id, user_id, change_version)",
        """
        CREATE INDEX hub_notification_expiring ON hub_notification (expiration_date_time)
            WHERE status = 'active'
        """,
        """
        CREATE INDEX hub_notification_tombstones ON hub_notification (last_modified_date_time)
            WHERE status <> 'active'
        """,
        """
        CREATE TABLE hub_endpoint (
            app_id text NOT NULL,
            user_id text NOT NULL,
            id text NOT NULL,
            platform text NOT NULL,
            platform_app_id text NOT NULL,
            transport text NOT NULL,
            token text,
            environment text,
            app_display_name text,
            state text NOT NULL,
            inactive_reason text,
            inactive_since timestamptz,
            registered_at timestamptz NOT NULL,
            last_sync_at timestamptz,
            PRIMARY KEY (app_id, user_id, id)
        )
        """,
        "CREATE INDEX hub_endpoint_token ON hub_endpoint (app_id, transport, token) WHERE token IS NOT NULL",
        "CREATE INDEX hub_endpoint_state ON hub_endpoint (app_id, state, user_id, id)",
        """
        CREATE TABLE hub_delivery (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
            finished_at timestamptz
        )
        """,
        "CREATE INDEX hub_delivery_due ON hub_delivery (urgency DESC, due_at, id) WHERE state = 'pending'",
        """
        CREATE UNIQUE INDEX hub_delivery_pending_tap ON hub_delivery (app_id, user_id, endpoint_id)
            WHERE state = 'pending' AND kind = 'shoulderTap' AND lease_owner IS NULL
        """,
        """
        CREATE INDEX hub_delivery_endpoint ON hub_delivery (app_id, user_id, endpoint_id)
            WHERE state = 'pending'
        """,
        "CREATE INDEX hub_delivery_finished ON hub_delivery (finished_at) WHERE state = 'finished'",
        """
        CREATE TABLE hub_shared_key (
            name text PRIMARY KEY,
            value bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
    ]

    /// Version 8: `hub_delivery_leased`, the pending rows under a lease (those in flight: a few per
    /// lane slot). A claim takes the expired ones first (``OutboxMachine/claimOrder``) without
    /// walking a backlog of unleased rows to find them.
    static let schemaV8 = [
        """
        CREATE INDEX hub_delivery_leased ON hub_delivery (lease_until)
            WHERE state = 'pending' AND lease_owner IS NOT NULL
        """
    ]

    /// Version 2: the dispatcher claims per transport lane (`transport = $1`), in the order of
    /// `hub_delivery_due`; this index serves that claim without reading other transports' rows.
    static let schemaV2 = [
        """
        CREATE INDEX hub_delivery_lane ON hub_delivery (transport, urgency DESC, due_at, id)
            WHERE state = 'pending'
        """
    ]

    /// Version 4: `hub_notification.fallback_details`, the fallback policy as `jsonb` when it names
    /// platforms or its own content (Graph's `endpointFallback`; `fallback_timeout_seconds` still
    /// holds the timeout), and `scheduled_date_time` with `hub_notification_scheduled`, the
    /// notifications the sweep releases (status `scheduled`) by time.
    /// Version 5: what delivery receipts read.
    /// - `hub_delivery.first_sent_at` (the first lease's `claimed_at`, kept when an outcome is
    ///   recorded) and `hub_delivery.provider_message_id` (`apns-id`, FCM's message name, …).
    /// - `hub_notification.published_version`: the version of the latest publish or release, kept
    ///   when a state change, a deletion or the expiry moves `change_version` (`NULL`: `change_version`).
    /// - `read_by`/`read_at`, `dismissed_by`/`dismissed_at`: the endpoint that made the latest such
    ///   change, and when.
    static let schemaV5 = [
        "ALTER TABLE hub_delivery ADD COLUMN first_sent_at timestamptz, ADD COLUMN provider_message_id text",
        """
        ALTER TABLE hub_notification ADD COLUMN published_version bigint, ADD COLUMN read_by text,
            ADD COLUMN read_at timestamptz, ADD COLUMN dismissed_by text, ADD COLUMN dismissed_at timestamptz
        """,
    ]

    static let schemaV4 = [
        "ALTER TABLE hub_notification ADD COLUMN fallback_details jsonb, ADD COLUMN scheduled_date_time timestamptz",
        """
        CREATE INDEX hub_notification_scheduled ON hub_notification (scheduled_date_time)
            WHERE status = 'scheduled'
        """,
    ]

    /// Version 3: deliveries parked for a configuration fault (`suspended_at`, `suspended_reason`)
    /// stay pending but are not claimed. `hub_delivery_lane` is rebuilt without them, so a lane's
    /// claim still reads only claimable rows in order; `hub_delivery_suspended` serves the
    /// statistics and the un-parking on start.
    static let schemaV3 = [
        "ALTER TABLE hub_delivery ADD COLUMN suspended_at timestamptz, ADD COLUMN suspended_reason text",
        "DROP INDEX hub_delivery_lane",
        """
        CREATE INDEX hub_delivery_lane ON hub_delivery (transport, urgency DESC, due_at, id)
            WHERE state = 'pending' AND suspended_at IS NULL
        """,
        """
        CREATE INDEX hub_delivery_suspended ON hub_delivery (app_id, transport)
            WHERE state = 'pending' AND suspended_at IS NOT NULL
        """,
    ]
}
