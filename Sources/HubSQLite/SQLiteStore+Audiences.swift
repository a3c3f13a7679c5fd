public import Foundation
import GRDB
public import HubCore

// User tags and broadcasts (`AudienceStore`).
extension SQLiteStore {
    /// `v8`: user tags and broadcasts.
    ///
    /// - `userTag`: one row per (app, user, tag); its key serves a user's tags and the tag
    ///   audiences' walk in user order.
    /// - `broadcast`: `seq` orders the list (newest first) and the expansion (oldest first);
    ///   `cursor` is the last user handed to a chunk (`''` before the first), `expanded` how many
    ///   users chunks took, `exhausted` whether the audience has no user after `cursor`.
    /// - `broadcastChunk`: the chunks leased and not finished, with their users (JSON), so that a
    ///   chunk taken over publishes the same users.
    /// - `broadcastUser`: the users of a `users` audience.
    static func addAudiences(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE userTag (
                    appId TEXT NOT NULL,
                    userId TEXT NOT NULL,
                    tag TEXT NOT NULL,
                    PRIMARY KEY (appId, userId, tag)
                ) WITHOUT ROWID;

                CREATE TABLE broadcast (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    appId TEXT NOT NULL,
                    id TEXT NOT NULL,
                    audience TEXT NOT NULL CHECK (audience IN ('allUsers', 'users', 'tags')),
                    anyOfTags TEXT NOT NULL,
                    allOfTags TEXT NOT NULL,
                    draft TEXT NOT NULL,
                    status TEXT NOT NULL,
                    audienceSize INTEGER,
                    expanded INTEGER NOT NULL DEFAULT 0,
                    published INTEGER NOT NULL DEFAULT 0,
                    failed INTEGER NOT NULL DEFAULT 0,
                    cursor TEXT NOT NULL DEFAULT '',
                    exhausted INTEGER NOT NULL DEFAULT 0,
                    createdAt REAL NOT NULL,
                    lastModifiedAt REAL NOT NULL,
                    completedAt REAL
                );
                CREATE UNIQUE INDEX broadcast_id ON broadcast (appId, id);
                CREATE INDEX broadcast_open ON broadcast (seq) WHERE status IN ('queued', 'running') AND exhausted = 0;
                CREATE INDEX broadcast_active ON broadcast (seq) WHERE status IN ('queued', 'running');

                CREATE TABLE broadcastChunk (
                    broadcastSeq INTEGER NOT NULL,
                    through TEXT NOT NULL,
                    users TEXT NOT NULL,
                    leaseOwner TEXT NOT NULL,
                    leaseUntil REAL NOT NULL,
                    PRIMARY KEY (broadcastSeq, through)
                ) WITHOUT ROWID;
                CREATE INDEX broadcastChunk_lease ON broadcastChunk (leaseUntil);

                CREATE TABLE broadcastUser (
                    broadcastSeq INTEGER NOT NULL,
                    userId TEXT NOT NULL,
                    PRIMARY KEY (broadcastSeq, userId)
                ) WITHOUT ROWID;
                """)
    }

    // MARK: Tags

    public func replaceTags(_ key: FeedKey, with tags: [String]) async throws {
        try Identifier.checkBeforeStoring(key)
        for tag in tags { try Identifier.checkBeforeStoring(["tag": tag]) }
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM userTag WHERE appId = ? AND userId = ?")
                .execute(arguments: [key.appId, key.userId])
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO userTag (appId, userId, tag) VALUES (?, ?, ?)")
            for tag in tags { try insert.execute(arguments: [key.appId, key.userId, tag]) }
        }
    }

    public func tags(_ key: FeedKey) async throws -> [String] {
        try Identifier.checkBeforeStoring(key)
        return try await read { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT tag FROM userTag WHERE appId = ? AND userId = ? ORDER BY tag"),
                arguments: [key.appId, key.userId])
        }
    }

    // MARK: Broadcasts

    static let broadcastColumns = """
        seq, appId, id, audience, anyOfTags, allOfTags, draft, status, audienceSize, published, failed, \
        createdAt, lastModifiedAt, completedAt
        """

    public func createBroadcast(_ broadcast: Broadcast, users: [String]) async throws -> Broadcast {
        try Identifier.checkBeforeStoring(["appId": broadcast.appId, "id": broadcast.id])
        for user in users { try Identifier.checkBeforeStoring(["userId": user]) }
        let draft = try BroadcastJSON.encode(broadcast.draft)
        let (kind, anyOf, allOf) = broadcast.audience.storedForm
        let (anyText, allText) = (try BroadcastJSON.encode(anyOf), try BroadcastJSON.encode(allOf))
        return try await write { db in
            let now = broadcast.createdDateTime.storedSeconds
            try db.cachedStatement(
                sql: """
                    INSERT INTO broadcast (appId, id, audience, anyOfTags, allOfTags, draft, status, \
                    createdAt, lastModifiedAt) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?)
                    """
            ).execute(arguments: [broadcast.appId, broadcast.id, kind, anyText, allText, draft, now, now])
            let seq = db.lastInsertedRowID
            if kind == "users" {
                let insert = try db.cachedStatement(
                    sql: "INSERT OR IGNORE INTO broadcastUser (broadcastSeq, userId) VALUES (?, ?)")
                for user in users { try insert.execute(arguments: [seq, user]) }
                try db.cachedStatement(
                    sql:
                        "UPDATE broadcast SET audienceSize = (SELECT count(*) FROM broadcastUser WHERE broadcastSeq = ?) WHERE seq = ?"
                ).execute(arguments: [seq, seq])
            }
            return try Self.fetchBroadcast(db, seq: seq)!
        }
    }

    public func broadcast(appId: String, id: String) async throws -> Broadcast? {
        try Identifier.checkBeforeStoring(["appId": appId, "id": id])
        return try await read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(Self.broadcastColumns) FROM broadcast WHERE appId = ? AND id = ?"),
                arguments: [appId, id]
            ).map(Self.broadcast(from:))
        }
    }

    public func broadcasts(appId: String, after: String?, limit: Int) async throws -> [Broadcast] {
        try Identifier.checkBeforeStoring(["appId": appId, "after": after])
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.broadcastColumns) FROM broadcast
                        WHERE appId = ? AND seq < coalesce((SELECT seq FROM broadcast WHERE appId = ? AND id = ?), 9e18)
                        ORDER BY seq DESC LIMIT ?
                        """),
                arguments: [appId, appId, after, limit]
            ).map(Self.broadcast(from:))
        }
    }

    public func cancelBroadcast(appId: String, id: String, at now: Date) async throws -> Broadcast? {
        try Identifier.checkBeforeStoring(["appId": appId, "id": id])
        return try await write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE broadcast SET status = 'cancelled', lastModifiedAt = ?, completedAt = ?
                    WHERE appId = ? AND id = ? AND status IN ('queued', 'running')
                    """
            ).execute(arguments: [now.storedSeconds, now.storedSeconds, appId, id])
            return try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(Self.broadcastColumns) FROM broadcast WHERE appId = ? AND id = ?"),
                arguments: [appId, id]
            ).map(Self.broadcast(from:))
        }
    }

    /// Reads first (an idle hub looks every second): writes only when a broadcast is open. The
    /// lease commits without an fsync of its own, like the outbox's: lost in a power cut, the
    /// chunk is leased and published again (idempotently).
    public func leaseBroadcastChunk(
        size: Int, owner: String, now: Date, leaseUntil: Date
    ) async throws -> BroadcastChunk? {
        let open = try await read { db in
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT EXISTS (SELECT 1 FROM broadcast WHERE status IN ('queued', 'running'))")) ?? false
        }
        guard open else { return nil }
        return try await write(.relaxed) { db in
            let until = leaseUntil.canonical
            // A chunk whose instance died first (its lease ended, or it is `owner` restarted:
            // an instance publishes one chunk at a time): the same users again.
            if let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT c.broadcastSeq, c.through, c.users FROM broadcastChunk c
                        JOIN broadcast b ON b.seq = c.broadcastSeq
                        WHERE (c.leaseUntil <= ? OR c.leaseOwner = ?) AND b.status IN ('queued', 'running')
                        ORDER BY c.leaseUntil LIMIT 1
                        """),
                arguments: [now.storedSeconds, owner])
            {
                let (seq, through, users): (Int64, String, String) = (row[0], row[1], row[2])
                try db.cachedStatement(
                    sql:
                        "UPDATE broadcastChunk SET leaseOwner = ?, leaseUntil = ? WHERE broadcastSeq = ? AND through = ?"
                ).execute(arguments: [owner, until.storedSeconds, seq, through])
                return BroadcastChunk(
                    broadcast: try Self.fetchBroadcast(db, seq: seq)!, users: try BroadcastJSON.list(users),
                    owner: owner, leaseUntil: until)
            }
            // Else the next users of the oldest open broadcast that has any left.
            while let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.broadcastColumns), cursor FROM broadcast
                        WHERE status IN ('queued', 'running') AND exhausted = 0 ORDER BY seq LIMIT 1
                        """))
            {
                let broadcast = try Self.broadcast(from: row)
                let seq: Int64 = row["seq"]
                let cursor: String = row["cursor"]
                let users = try Self.audienceUsers(db, seq: seq, broadcast: broadcast, after: cursor, limit: size)
                if users.isEmpty {
                    try db.cachedStatement(
                        sql: "UPDATE broadcast SET exhausted = 1, audienceSize = expanded WHERE seq = ?"
                    ).execute(arguments: [seq])
                    try Self.completeIfFinished(db, seq: seq, now: now)
                    continue
                }
                try db.cachedStatement(
                    sql: """
                        INSERT INTO broadcastChunk (broadcastSeq, through, users, leaseOwner, leaseUntil)
                        VALUES (?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [seq, users.last!, try BroadcastJSON.encode(users), owner, until.storedSeconds])
                // Fewer users than asked for: the audience has none after them.
                try db.cachedStatement(
                    sql: """
                        UPDATE broadcast SET cursor = ?, expanded = expanded + ?, status = 'running',
                            lastModifiedAt = ?, exhausted = ?,
                            audienceSize = CASE WHEN ? THEN expanded + ? ELSE audienceSize END
                        WHERE seq = ?
                        """
                ).execute(arguments: [
                    users.last!, users.count, now.storedSeconds, users.count < size, users.count < size, users.count,
                    seq,
                ])
                var leased = broadcast
                leased.status = .running
                return BroadcastChunk(broadcast: leased, users: users, owner: owner, leaseUntil: until)
            }
            return nil
        }
    }

    public func finishBroadcastChunk(
        _ chunk: BroadcastChunk, published: Int, failed: Int, at now: Date
    ) async throws {
        let broadcast = chunk.broadcast
        // Lost in a power cut, the chunk stays leased and is published (and counted) again.
        try await write(.relaxed) { db in
            guard
                let seq = try Int64.fetchOne(
                    db.cachedStatement(sql: "SELECT seq FROM broadcast WHERE appId = ? AND id = ?"),
                    arguments: [broadcast.appId, broadcast.id])
            else { return }
            try db.cachedStatement(
                sql: "DELETE FROM broadcastChunk WHERE broadcastSeq = ? AND through = ? AND leaseOwner = ?"
            ).execute(arguments: [seq, chunk.through, chunk.owner])
            guard db.changesCount > 0 else { return }
            try db.cachedStatement(
                sql: """
                    UPDATE broadcast SET published = published + ?, failed = failed + ?, lastModifiedAt = ?
                    WHERE seq = ?
                    """
            ).execute(arguments: [published, failed, now.storedSeconds, seq])
            try Self.completeIfFinished(db, seq: seq, now: now)
        }
    }

    /// Marks the broadcast `done` when its audience is exhausted and no chunk is outstanding.
    static func completeIfFinished(_ db: Database, seq: Int64, now: Date) throws {
        try db.cachedStatement(
            sql: """
                UPDATE broadcast SET status = 'done', completedAt = ?, lastModifiedAt = ?
                WHERE seq = ? AND exhausted = 1 AND status IN ('queued', 'running')
                    AND NOT EXISTS (SELECT 1 FROM broadcastChunk WHERE broadcastSeq = ?)
                """
        ).execute(arguments: [now.storedSeconds, now.storedSeconds, seq, seq])
    }

    /// The next `limit` users of the broadcast's audience after `cursor`, in byte order.
    private static func audienceUsers(
        _ db: Database, seq: Int64, broadcast: Broadcast, after cursor: String, limit: Int
    ) throws -> [String] {
        switch broadcast.audience {
        case .users:
            return try String.fetchAll(
                db.cachedStatement(
                    sql:
                        "SELECT userId FROM broadcastUser WHERE broadcastSeq = ? AND userId > ? ORDER BY userId LIMIT ?"
                ),
                arguments: [seq, cursor, limit])
        case .allUsers:
            let withEndpoints = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT userId FROM endpoint WHERE appId = ? AND state = 'active' AND userId > ?
                        ORDER BY userId LIMIT ?
                        """),
                arguments: [broadcast.appId, cursor, limit])
            let withFeeds = try String.fetchAll(
                db.cachedStatement(
                    sql:
                        "SELECT DISTINCT userId FROM notification WHERE appId = ? AND userId > ? ORDER BY userId LIMIT ?"
                ),
                arguments: [broadcast.appId, cursor, limit])
            return AudienceOrder.merge([withEndpoints, withFeeds], limit: limit)
        case .tags(let anyOf, let allOf):
            var conditions: [String] = []
            var arguments: [(any DatabaseValueConvertible)?] = [broadcast.appId, cursor]
            if !anyOf.isEmpty {
                conditions.append("sum(tag IN (\(anyOf.map { _ in "?" }.joined(separator: ", ")))) > 0")
                arguments += anyOf.map { $0 as (any DatabaseValueConvertible)? }
            }
            if !allOf.isEmpty {
                conditions.append("sum(tag IN (\(allOf.map { _ in "?" }.joined(separator: ", ")))) = ?")
                arguments += allOf.map { $0 as (any DatabaseValueConvertible)? }
                arguments.append(Set(allOf).count)
            }
            arguments.append(limit)
            return try String.fetchAll(
                db,
                sql: """
                    SELECT userId FROM userTag WHERE appId = ? AND userId > ?
                    GROUP BY userId HAVING \(conditions.joined(separator: " AND "))
                    ORDER BY userId LIMIT ?
                    """,
                arguments: StatementArguments(arguments))
        }
    }

    private static func fetchBroadcast(_ db: Database, seq: Int64) throws -> Broadcast? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(broadcastColumns) FROM broadcast WHERE seq = ?"), arguments: [seq]
        ).map(broadcast(from:))
    }

    private static func broadcast(from row: Row) throws -> Broadcast {
        let kind: String = row["audience"]
        let size: Int? = row["audienceSize"]
        let audience: BroadcastAudience
        switch kind {
        case "users": audience = .users(count: size ?? 0)
        case "tags":
            audience = .tags(
                anyOf: try BroadcastJSON.list(row["anyOfTags"]), allOf: try BroadcastJSON.list(row["allOfTags"]))
        default: audience = .allUsers
        }
        return Broadcast(
            appId: row["appId"], id: row["id"], audience: audience, draft: try BroadcastJSON.draft(row["draft"]),
            status: BroadcastStatus(rawValue: row["status"]), audienceSize: size, published: row["published"],
            failed: row["failed"], createdDateTime: row.date("createdAt"),
            lastModifiedDateTime: row.date("lastModifiedAt"), completedDateTime: row.optionalDate("completedAt"))
    }
}
