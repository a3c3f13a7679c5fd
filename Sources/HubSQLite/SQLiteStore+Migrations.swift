import GRDB

extension SQLiteStore {
    /// The schema's history. Each migration runs once, in order, in its own transaction; GRDB
    /// records applied identifiers in `grdb_migrations`. Never edit a shipped migration: append
    /// `v2`, `v3`, … instead.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: createSchemaV1)
        migrator.registerMigration("v2", migrate: addOutboxLanes)
        migrator.registerMigration("v3", migrate: addSuspendedDeliveries)
        migrator.registerMigration("v4", migrate: dropDueIndex)
        migrator.registerMigration("v5", migrate: addFallbackDetailsAndSchedules)
        migrator.registerMigration("v6", migrate: addReceipts)
        migrator.registerMigration("v7", migrate: addStatisticsTables)
        migrator.registerMigration("v8", migrate: addAudiences)
        migrator.registerMigration("v9", migrate: addLeasedIndex)
        migrator.registerMigration("v10", migrate: addConsoleIndexes)
        migrator.registerMigration("v11", migrate: addBadgeCounters)
        migrator.registerMigration("v12", migrate: addWebhookEvents)
        return migrator
    }()

    /// The initial schema.
    ///
    /// - `changeCounter`: one row holding the last change version handed out (store-wide, so the
    ///   versions of all feeds interleave but each feed's versions only grow).
    /// - `notification`: keyed by (appId, userId, id); unique (appId, userId, appNotificationId);
    ///   the feed reads (appId, userId, changeVersion); the sweeper reads active ones by expiration
    ///   and tombstones by last modification.
    /// - `endpoint`: keyed by (appId, userId, id); looked up by (appId, transport, token) to move a
    ///   token between users, and listed by (appId, state) for the feedback list.
    /// - `delivery`: the outbox. Claimed by (state, dueAt); at most one pending, unleased
    ///   shoulder tap per endpoint (the row new taps coalesce into); finished rows purged by
    ///   finishedAt. Deliveries reference endpoints and notifications by key without foreign keys:
    ///   finished rows outlive both (statistics), and the store removes pending ones explicitly.
    private static func createSchemaV1(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE changeCounter (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    lastVersion INTEGER NOT NULL
                );
                INSERT INTO changeCounter (id, lastVersion) VALUES (1, 0);

                CREATE TABLE notification (
                    appId TEXT NOT NULL,
                    userId TEXT NOT NULL,
                    id TEXT NOT NULL,
                    appNotificationId TEXT NOT NULL,
                    groupName TEXT,
                    priority TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    targetPolicy TEXT NOT NULL,
                    displayTimeToLive INTEGER,
                    expirationDateTime REAL NOT NULL,
                    fallbackTimeoutSeconds INTEGER,
                    deliveryMode TEXT,
                    createdDateTime REAL NOT NULL,
                    lastModifiedDateTime REAL NOT NULL,
                    readState TEXT NOT NULL,
                    userActionState TEXT NOT NULL,
                    status TEXT NOT NULL,
                    changeVersion INTEGER NOT NULL,
                    PRIMARY KEY (appId, userId, id)
                );
                CREATE UNIQUE INDEX notification_appNotificationId
                    ON notification (appId, userId, appNotificationId);
                CREATE INDEX notification_feed ON notification (appId, userId, changeVersion);
                CREATE INDEX notification_expiring ON notification (expirationDateTime)
                    WHERE status = 'active';
                CREATE INDEX notification_tombstones ON notification (lastModifiedDateTime)
                    WHERE status <> 'active';

                CREATE TABLE endpoint (
                    appId TEXT NOT NULL,
                    userId TEXT NOT NULL,
                    id TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    platformAppId TEXT NOT NULL,
                    transport TEXT NOT NULL,
                    token TEXT,
                    environment TEXT,
                    appDisplayName TEXT,
                    state TEXT NOT NULL,
                    inactiveReason TEXT,
                    inactiveSince REAL,
                    registeredAt REAL NOT NULL,
                    lastSyncAt REAL,
                    PRIMARY KEY (appId, userId, id)
                );
                CREATE INDEX endpoint_token ON endpoint (appId, transport, token);
                CREATE INDEX endpoint_state ON endpoint (appId, state, userId, id);

                CREATE TABLE delivery (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    appId TEXT NOT NULL,
                    userId TEXT NOT NULL,
                    endpointId TEXT NOT NULL,
                    transport TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    notificationId TEXT,
                    changeVersion INTEGER NOT NULL,
                    priority TEXT NOT NULL,
                    urgency INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'finished')),
                    leaseOwner TEXT,
                    leaseUntil REAL,
                    claimedAt REAL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    createdAt REAL NOT NULL,
                    dueAt REAL NOT NULL,
                    lastError TEXT,
                    result TEXT,
                    detail TEXT,
                    finishedAt REAL
                );
                CREATE INDEX delivery_due ON delivery (state, dueAt);
                CREATE UNIQUE INDEX delivery_pendingTap ON delivery (appId, userId, endpointId)
                    WHERE state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL;
                CREATE INDEX delivery_endpoint ON delivery (appId, userId, endpointId, state);
                CREATE INDEX delivery_finished ON delivery (state, finishedAt) WHERE state = 'finished';
                """)
    }

    /// `v2`: the dispatcher claims per transport lane, in priority order. The partial index lets a
    /// claim walk one lane's pending rows in that order instead of sorting every pending row.
    private static func addOutboxLanes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX delivery_lane ON delivery (transport, urgency DESC, dueAt, id)
                    WHERE state = 'pending';
                """)
    }

    /// `v9`: `delivery_leased`, the pending rows under a lease (those in flight: a few per lane
    /// slot). A claim takes the expired ones first (``OutboxMachine/claimOrder``) without walking a
    /// backlog of unleased rows to find them.
    private static func addLeasedIndex(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX delivery_leased ON delivery (leaseUntil)
                    WHERE state = 'pending' AND leaseOwner IS NOT NULL;
                """)
    }

    /// `v3`: deliveries parked for a configuration fault (`suspendedAt`, `suspendedReason`) stay
    /// pending but are not claimed. `delivery_lane` is rebuilt without them, so a lane's claim
    /// still walks only claimable rows in order; `delivery_suspended` serves the statistics and
    /// the un-parking on start.
    private static func addSuspendedDeliveries(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE delivery ADD COLUMN suspendedAt REAL;
                ALTER TABLE delivery ADD COLUMN suspendedReason TEXT;
                DROP INDEX delivery_lane;
                CREATE INDEX delivery_lane ON delivery (transport, urgency DESC, dueAt, id)
                    WHERE state = 'pending' AND suspendedAt IS NULL;
                CREATE INDEX delivery_suspended ON delivery (appId, transport)
                    WHERE state = 'pending' AND suspendedAt IS NOT NULL;
                """)
    }

    /// `v5`: `notification.fallbackDetails`, the fallback policy as JSON when it names platforms or
    /// its own content (Graph's `endpointFallback`; `fallbackTimeoutSeconds` still holds the
    /// timeout), and `notification.scheduledDateTime` with `notification_scheduled`, the
    /// notifications the sweep releases (status `scheduled`) by time.
    private static func addFallbackDetailsAndSchedules(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE notification ADD COLUMN fallbackDetails TEXT;
                ALTER TABLE notification ADD COLUMN scheduledDateTime REAL;
                CREATE INDEX notification_scheduled ON notification (scheduledDateTime) WHERE status = 'scheduled';
                """)
    }

    /// `v6`: what delivery receipts read.
    /// - `delivery.firstSentAt` (the first lease's `claimedAt`, kept when an outcome is recorded) and
    ///   `delivery.providerMessageId` (`apns-id`, FCM's message name, …).
    /// - `notification.publishedVersion`: the version of the latest publish or release, kept when a
    ///   state change, a deletion or the expiry moves `changeVersion` (`NULL`: `changeVersion`).
    /// - `notification.readBy`/`readAt`, `dismissedBy`/`dismissedAt`: the endpoint that made the
    ///   latest such change, and when.
    /// - `delivery_notification`: a notification's deliveries, for its receipts and the purge.
    private static func addReceipts(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE delivery ADD COLUMN firstSentAt REAL;
                ALTER TABLE delivery ADD COLUMN providerMessageId TEXT;
                ALTER TABLE notification ADD COLUMN publishedVersion INTEGER;
                ALTER TABLE notification ADD COLUMN readBy TEXT;
                ALTER TABLE notification ADD COLUMN readAt REAL;
                ALTER TABLE notification ADD COLUMN dismissedBy TEXT;
                ALTER TABLE notification ADD COLUMN dismissedAt REAL;
                """)
    }

    /// `v4`: `delivery_due (state, dueAt)` goes. It only served "the pending rows" (the next due
    /// time, the outbox's depth, the stray lane's claims), which `delivery_lane` (pending, not
    /// suspended) and `delivery_suspended` serve; every delivery row was inserted into it, moved
    /// within it when finished and deleted from it by the sweep (one B-tree of six).
    private static func dropDueIndex(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX delivery_due")
    }

    /// `v11`: `badgeCounter`, the user's active, unread, undismissed notifications per scope (a
    /// targeted platform, or `*` for those that target every platform; see `BadgeCount`), kept by
    /// every change of a notification. Filled here from the notifications already stored.
    private static func addBadgeCounters(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE badgeCounter (
                    appId TEXT NOT NULL,
                    userId TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    unread INTEGER NOT NULL,
                    PRIMARY KEY (appId, userId, scope)
                ) WITHOUT ROWID;
                INSERT INTO badgeCounter (appId, userId, scope, unread)
                SELECT appId, userId, scope, count(*) FROM (
                    SELECT appId, userId, id, '*' AS scope FROM notification
                    WHERE status = 'active' AND readState = 'unread' AND userActionState <> 'dismissed'
                        AND json_array_length(targetPolicy, '$.platformTypes') = 0
                    UNION
                    SELECT n.appId, n.userId, n.id, p.value FROM notification n, json_each(n.targetPolicy, '$.platformTypes') p
                    WHERE n.status = 'active' AND n.readState = 'unread' AND n.userActionState <> 'dismissed'
                )
                GROUP BY appId, userId, scope;
                """)
    }

    /// `v12`: webhook events (``WebhookStore``). Their outbox rows are `delivery` rows of transport
    /// `webhook`; `webhookEvent` holds each row's event (ID, type, body) and goes with its row
    /// (`ON DELETE CASCADE`: the sweep's purge of finished rows). `delivery_endpoint` already finds
    /// the older pending events of a user and webhook (``OutboxMachine/webhookOrder(table:row:column:)``);
    /// `delivery_webhook` serves the console's summary per webhook.
    static func addWebhookEvents(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE webhookEvent (
                    deliveryId INTEGER PRIMARY KEY REFERENCES delivery (id) ON DELETE CASCADE,
                    eventId TEXT NOT NULL,
                    type TEXT NOT NULL,
                    body TEXT NOT NULL
                );
                CREATE INDEX delivery_webhook ON delivery (appId, endpointId, state, finishedAt)
                    WHERE transport = 'webhooks';
                """)
    }
}
