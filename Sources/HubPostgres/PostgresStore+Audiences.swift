public import Foundation
public import HubCore
import PostgresNIO

// User tags and broadcasts (`AudienceStore`). User IDs and tags compare byte for byte
// (`COLLATE "C"`), as SQLite and the hub's merge order them.
extension PostgresStore {
    /// Version 7: user tags and broadcasts.
    ///
    /// - `hub_user_tag`: one row per (app, user, tag); its key serves a user's tags and the tag
    ///   audiences' walk in user order.
    /// - `hub_broadcast`: `seq` orders the list (newest first) and the expansion (oldest first);
    ///   `cursor` is the last user handed to a chunk (`''` before the first), `expanded` how many
    ///   users chunks took, `exhausted` whether the audience has no user after `cursor`.
    /// - `hub_broadcast_chunk`: the chunks leased and not finished, with their users, so that a
    ///   chunk taken over publishes the same users.
    /// - `hub_broadcast_user`: the users of a `users` audience.
    /// - `hub_endpoint_active_user`, `hub_notification_user`: "all users" walks the users with an
    ///   active endpoint and those with a feed in byte order.
    static let schemaV7 = [
        """
        CREATE TABLE hub_user_tag (
            app_id text NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            tag text COLLATE "C" NOT NULL,
            PRIMARY KEY (app_id, user_id, tag)
        )
        """,
        """
        CREATE TABLE hub_broadcast (
            seq bigserial PRIMARY KEY,
            app_id text NOT NULL,
            id text NOT NULL,
            audience text NOT NULL CHECK (audience IN ('allUsers', 'users', 'tags')),
            any_of_tags text[] NOT NULL,
            all_of_tags text[] NOT NULL,
            draft text NOT NULL,
            status text NOT NULL,
            audience_size integer,
            expanded integer NOT NULL DEFAULT 0,
            published integer NOT NULL DEFAULT 0,
            failed integer NOT NULL DEFAULT 0,
            cursor text COLLATE "C" NOT NULL DEFAULT '',
            exhausted boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL,
            last_modified_at timestamptz NOT NULL,
            completed_at timestamptz,
            UNIQUE (app_id, id)
        )
        """,
        "CREATE INDEX hub_broadcast_open ON hub_broadcast (seq) WHERE status IN ('queued', 'running') AND NOT exhausted",
        """
        CREATE TABLE hub_broadcast_chunk (
            broadcast_seq bigint NOT NULL,
            through text COLLATE "C" NOT NULL,
            users text[] NOT NULL,
            lease_owner text NOT NULL,
            lease_until timestamptz NOT NULL,
            PRIMARY KEY (broadcast_seq, through)
        )
        """,
        "CREATE INDEX hub_broadcast_chunk_lease ON hub_broadcast_chunk (lease_until)",
        """
        CREATE TABLE hub_broadcast_user (
            broadcast_seq bigint NOT NULL,
            user_id text COLLATE "C" NOT NULL,
            PRIMARY KEY (broadcast_seq, user_id)
        )
        """,
        """
        CREATE INDEX hub_endpoint_active_user ON hub_endpoint (app_id, (user_id COLLATE "C"))
            WHERE state = 'active'
        """,
        "CREATE INDEX hub_notification_user ON hub_notification (app_id, (user_id COLLATE \"C\"))",
    ]

    // MARK: Tags

    public func replaceTags(_ key: FeedKey, with tags: [String]) async throws {
        try Identifier.checkBeforeStoring(key)
        for tag in tags { try Identifier.checkBeforeStoring(["tag": tag]) }
        try await transaction { db in
            try await db.rows("DELETE FROM hub_user_tag WHERE app_id = \(key.appId) AND user_id = \(key.userId)")
            try await db.rows(
                """
                INSERT INTO hub_user_tag (app_id, user_id, tag)
                SELECT \(key.appId), \(key.userId), t FROM unnest(\(tags)::text[]) AS t ON CONFLICT DO NOTHING
                """)
        }
    }

    public func tags(_ key: FeedKey) async throws -> [String] {
        try Identifier.checkBeforeStoring(key)
        return try await rows(
            "SELECT tag FROM hub_user_tag WHERE app_id = \(key.appId) AND user_id = \(key.userId) ORDER BY tag"
        ).map { try $0.decode(String.self) }
    }

    // MARK: Broadcasts

    static let broadcastColumns = """
        seq, app_id, id, audience, any_of_tags, all_of_tags, draft, status, audience_size, published, failed, \
        created_at, last_modified_at, completed_at
        """

    public func createBroadcast(_ broadcast: Broadcast, users: [String]) async throws -> Broadcast {
        try Identifier.checkBeforeStoring(["appId": broadcast.appId, "id": broadcast.id])
        for user in users { try Identifier.checkBeforeStoring(["userId": user]) }
        let draft = try BroadcastJSON.encode(broadcast.draft)
        let (kind, anyOf, allOf) = broadcast.audience.storedForm
        let b = broadcast
        return try await transaction { db in
            let seq = try await db.rows(
                """
                INSERT INTO hub_broadcast (app_id, id, audience, any_of_tags, all_of_tags, draft, status,
                    created_at, last_modified_at)
                VALUES (\(b.appId), \(b.id), \(kind), \(anyOf)::text[], \(allOf)::text[], \(draft), 'queued',
                    \(b.createdDateTime), \(b.createdDateTime))
                RETURNING seq
                """
            ).first!.decode(Int64.self)
            if kind == "users" {
                try await db.rows(
                    """
                    INSERT INTO hub_broadcast_user (broadcast_seq, user_id)
                    SELECT \(seq), u FROM unnest(\(users)::text[]) AS u ON CONFLICT DO NOTHING
                    """)
                try await db.rows(
                    """
                    UPDATE hub_broadcast SET audience_size = (SELECT count(*) FROM hub_broadcast_user WHERE broadcast_seq = \(seq))
                    WHERE seq = \(seq)
                    """)
            }
            return try await Self.fetchBroadcast(db, seq: seq)!
        }
    }

    public func broadcast(appId: String, id: String) async throws -> Broadcast? {
        try Identifier.checkBeforeStoring(["appId": appId, "id": id])
        return try await rows(
            "SELECT \(unescaped: Self.broadcastColumns) FROM hub_broadcast WHERE app_id = \(appId) AND id = \(id)"
        ).first.map(Self.broadcast(from:))
    }

    public func broadcasts(appId: String, after: String?, limit: Int) async throws -> [Broadcast] {
        try Identifier.checkBeforeStoring(["appId": appId, "after": after])
        return try await rows(
            """
            SELECT \(unescaped: Self.broadcastColumns) FROM hub_broadcast
            WHERE app_id = \(appId)
                AND seq < coalesce((SELECT seq FROM hub_broadcast WHERE app_id = \(appId) AND id = \(after)::text),
                    9223372036854775807)
            ORDER BY seq DESC LIMIT \(limit)
            """
        ).map(Self.broadcast(from:))
    }

    public func cancelBroadcast(appId: String, id: String, at now: Date) async throws -> Broadcast? {
        try Identifier.checkBeforeStoring(["appId": appId, "id": id])
        return try await transaction { db in
            try await db.rows(
                """
                UPDATE hub_broadcast SET status = 'cancelled', last_modified_at = \(now), completed_at = \(now)
                WHERE app_id = \(appId) AND id = \(id) AND status IN ('queued', 'running')
                """)
            return try await db.rows(
                "SELECT \(unescaped: Self.broadcastColumns) FROM hub_broadcast WHERE app_id = \(appId) AND id = \(id)"
            ).first.map(Self.broadcast(from:))
        }
    }

    public func leaseBroadcastChunk(
        size: Int, owner: String, now: Date, leaseUntil: Date
    ) async throws -> BroadcastChunk? {
        try await transaction { db in
            // A chunk whose instance died first (its lease ended, or it is `owner` restarted:
            // an instance publishes one chunk at a time): the same users again.
            if let row = try await db.rows(
                """
                SELECT c.broadcast_seq, c.through, c.users FROM hub_broadcast_chunk c
                JOIN hub_broadcast b ON b.seq = c.broadcast_seq
                WHERE (c.lease_until <= \(now) OR c.lease_owner = \(owner)) AND b.status IN ('queued', 'running')
                ORDER BY c.lease_until LIMIT 1 FOR UPDATE OF c SKIP LOCKED
                """
            ).first {
                let (seq, through, users) = try row.decode((Int64, String, [String]).self)
                try await db.rows(
                    """
                    UPDATE hub_broadcast_chunk SET lease_owner = \(owner), lease_until = \(leaseUntil)
                    WHERE broadcast_seq = \(seq) AND through = \(through)
                    """)
                return BroadcastChunk(
                    broadcast: try await Self.fetchBroadcast(db, seq: seq)!, users: users, owner: owner,
                    leaseUntil: leaseUntil)
            }
            // Else the next users of the oldest open broadcast that has any left. The row lock
            // makes instances take its chunks one after the other, each after the last cursor.
            while let row = try await db.rows(
                """
                SELECT \(unescaped: Self.broadcastColumns), cursor FROM hub_broadcast
                WHERE status IN ('queued', 'running') AND NOT exhausted ORDER BY seq LIMIT 1 FOR UPDATE
                """
            ).first {
                let broadcast = try Self.broadcast(from: row)
                let cells = row.makeRandomAccess()
                let seq = try cells[0].decode(Int64.self)
                let cursor = try cells[14].decode(String.self)
                let users = try await Self.audienceUsers(db, seq: seq, broadcast: broadcast, after: cursor, limit: size)
                guard let last = users.last else {
                    try await db.rows(
                        "UPDATE hub_broadcast SET exhausted = true, audience_size = expanded WHERE seq = \(seq)")
                    try await Self.completeIfFinished(db, seq: seq, now: now)
                    continue
                }
                // Fewer users than asked for: the audience has none after them.
                let exhausted = users.count < size
                try await db.rows(
                    """
                    INSERT INTO hub_broadcast_chunk (broadcast_seq, through, users, lease_owner, lease_until)
                    VALUES (\(seq), \(last), \(users)::text[], \(owner), \(leaseUntil))
                    """)
                try await db.rows(
                    """
                    UPDATE hub_broadcast SET cursor = \(last), expanded = expanded + \(users.count),
                        status = 'running', last_modified_at = \(now), exhausted = \(exhausted),
                        audience_size = CASE WHEN \(exhausted) THEN expanded + \(users.count) ELSE audience_size END
                    WHERE seq = \(seq)
                    """)
                var leased = broadcast
                leased.status = .running
                return BroadcastChunk(broadcast: leased, users: users, owner: owner, leaseUntil: leaseUntil)
            }
            return nil
        }
    }

    public func finishBroadcastChunk(
        _ chunk: BroadcastChunk, published: Int, failed: Int, at now: Date
    ) async throws {
        let broadcast = chunk.broadcast
        try await transaction { db in
            guard
                let seq = try await db.rows(
                    "SELECT seq FROM hub_broadcast WHERE app_id = \(broadcast.appId) AND id = \(broadcast.id) FOR UPDATE"
                ).first?.decode(Int64.self)
            else { return }
            let ended = try await db.rows(
                """
                DELETE FROM hub_broadcast_chunk
                WHERE broadcast_seq = \(seq) AND through = \(chunk.through) AND lease_owner = \(chunk.owner)
                RETURNING through
                """)
            guard !ended.isEmpty else { return }
            try await db.rows(
                """
                UPDATE hub_broadcast SET published = published + \(published), failed = failed + \(failed),
                    last_modified_at = \(now)
                WHERE seq = \(seq)
                """)
            try await Self.completeIfFinished(db, seq: seq, now: now)
        }
    }

    /// Marks the broadcast `done` when its audience is exhausted and no chunk is outstanding.
    static func completeIfFinished(_ db: Session, seq: Int64, now: Date) async throws {
        try await db.rows(
            """
            UPDATE hub_broadcast SET status = 'done', completed_at = \(now), last_modified_at = \(now)
            WHERE seq = \(seq) AND exhausted AND status IN ('queued', 'running')
                AND NOT EXISTS (SELECT 1 FROM hub_broadcast_chunk WHERE broadcast_seq = \(seq))
            """)
    }

    /// The next `limit` users of the broadcast's audience after `cursor`, in byte order.
    private static func audienceUsers(
        _ db: Session, seq: Int64, broadcast: Broadcast, after cursor: String, limit: Int
    ) async throws -> [String] {
        let app = broadcast.appId
        switch broadcast.audience {
        case .users:
            return try await db.rows(
                """
                SELECT user_id FROM hub_broadcast_user WHERE broadcast_seq = \(seq) AND user_id > \(cursor)
                ORDER BY user_id LIMIT \(limit)
                """
            ).map { try $0.decode(String.self) }
        case .allUsers:
            let withEndpoints = try await db.rows(
                """
                SELECT DISTINCT user_id COLLATE "C" AS u FROM hub_endpoint
                WHERE app_id = \(app) AND state = 'active' AND user_id COLLATE "C" > \(cursor)
                ORDER BY u LIMIT \(limit)
                """
            ).map { try $0.decode(String.self) }
            let withFeeds = try await db.rows(
                """
                SELECT DISTINCT user_id COLLATE "C" AS u FROM hub_notification
                WHERE app_id = \(app) AND user_id COLLATE "C" > \(cursor)
                ORDER BY u LIMIT \(limit)
                """
            ).map { try $0.decode(String.self) }
            return AudienceOrder.merge([withEndpoints, withFeeds], limit: limit)
        case .tags(let anyOf, let allOf):
            return try await db.rows(
                """
                SELECT user_id FROM hub_user_tag WHERE app_id = \(app) AND user_id > \(cursor)
                GROUP BY user_id
                HAVING (cardinality(\(anyOf)::text[]) = 0 OR bool_or(tag = ANY(\(anyOf)::text[])))
                    AND count(DISTINCT tag) FILTER (WHERE tag = ANY(\(allOf)::text[]))
                        = (SELECT count(DISTINCT a) FROM unnest(\(allOf)::text[]) AS a)
                ORDER BY user_id LIMIT \(limit)
                """
            ).map { try $0.decode(String.self) }
        }
    }

    private static func fetchBroadcast(_ db: Session, seq: Int64) async throws -> Broadcast? {
        try await db.rows("SELECT \(unescaped: broadcastColumns) FROM hub_broadcast WHERE seq = \(seq)")
            .first.map(broadcast(from:))
    }

    private static func broadcast(from row: PostgresRow) throws -> Broadcast {
        let cells = row.makeRandomAccess()
        let kind = try cells[3].decode(String.self)
        let size = try cells[8].decode(Int?.self)
        let audience: BroadcastAudience
        switch kind {
        case "users": audience = .users(count: size ?? 0)
        case "tags":
            audience = .tags(anyOf: try cells[4].decode([String].self), allOf: try cells[5].decode([String].self))
        default: audience = .allUsers
        }
        return Broadcast(
            appId: try cells[1].decode(String.self), id: try cells[2].decode(String.self), audience: audience,
            draft: try BroadcastJSON.draft(try cells[6].decode(String.self)),
            status: BroadcastStatus(rawValue: try cells[7].decode(String.self)), audienceSize: size,
            published: try cells[9].decode(Int.self), failed: try cells[10].decode(Int.self),
            createdDateTime: try cells[11].decode(Date.self), lastModifiedDateTime: try cells[12].decode(Date.self),
            completedDateTime: try cells[13].decode(Date?.self))
    }
}
