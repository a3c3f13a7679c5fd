public import Foundation
import GRDB
public import HubCore

// A user's data, exported and erased (`UserDataStore`).
extension SQLiteStore {
    /// Everything held about the user, read in one snapshot.
    public func exportUser(_ key: FeedKey) async throws -> UserRecord {
        try Identifier.checkBeforeStoring(key)
        return try await read { db in
            let notifications = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(NotificationRecord.selection),
                            COALESCE(publishedVersion, changeVersion) AS publishedVersion, readBy, readAt, dismissedBy, dismissedAt
                        FROM notification WHERE appId = ? AND userId = ?
                        ORDER BY createdDateTime DESC, changeVersion DESC
                        """),
                arguments: [key.appId, key.userId]
            ).map { row in
                NotificationTrace(
                    notification: Self.canonical(try NotificationRecord(row: row).notification),
                    publishedVersion: row["publishedVersion"], readBy: row["readBy"],
                    readAt: row.optionalDate("readAt"),
                    dismissedBy: row["dismissedBy"], dismissedAt: row.optionalDate("dismissedAt"), deliveries: [])
            }
            let endpoints = try EndpointRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM endpoint WHERE appId = ? AND userId = ? ORDER BY id"),
                arguments: [key.appId, key.userId]
            ).map { Self.canonical($0.endpoint) }
            let tags = try String.fetchAll(
                db.cachedStatement(sql: "SELECT tag FROM userTag WHERE appId = ? AND userId = ? ORDER BY tag"),
                arguments: [key.appId, key.userId])
            let deliveries = try DeliveryRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM delivery WHERE appId = ? AND userId = ? ORDER BY id"),
                arguments: [key.appId, key.userId]
            ).map(\.trace)
            let broadcasts = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT b.id FROM broadcastUser u JOIN broadcast b ON b.seq = u.broadcastSeq
                        WHERE b.appId = ? AND u.userId = ? ORDER BY b.seq
                        """),
                arguments: [key.appId, key.userId])
            return UserRecord(
                notifications: notifications, endpoints: endpoints, tags: tags, deliveries: deliveries,
                broadcasts: broadcasts)
        }
    }

    /// Removes every row naming the user in one durable transaction.
    public func eraseUser(_ key: FeedKey, at now: Date) async throws -> UserErasure {
        try Identifier.checkBeforeStoring(key)
        return try await write { db in
            var erased = UserErasure()
            let arguments: StatementArguments = [key.appId, key.userId]
            func delete(_ table: String) throws -> Int {
                try db.execute(sql: "DELETE FROM \(table) WHERE appId = ? AND userId = ?", arguments: arguments)
                return db.changesCount
            }
            erased.notifications = try delete("notification")
            _ = try delete("badgeCounter")  // the counts of those notifications
            erased.endpoints = try delete("endpoint")
            erased.tags = try delete("userTag")
            erased.deliveries = try delete("delivery")
            erased.broadcasts = try Self.eraseFromBroadcasts(db, key, now: now)
            return erased
        }
    }

    /// Takes the user out of the app's broadcasts: a `users` audience's list, the chunks being
    /// published (a chunk left without users goes), and an expansion cursor at the user (moved to
    /// the greatest user before it that any audience could name, so the same users come next).
    /// - Returns: how many broadcasts named the user.
    private static func eraseFromBroadcasts(_ db: Database, _ key: FeedKey, now: Date) throws -> Int {
        let (app, user) = (key.appId, key.userId)
        var touched = Set(
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT u.broadcastSeq FROM broadcastUser u JOIN broadcast b ON b.seq = u.broadcastSeq
                    WHERE b.appId = ? AND u.userId = ?
                    """, arguments: [app, user]))
        for seq in touched {
            try db.execute(
                sql: "DELETE FROM broadcastUser WHERE broadcastSeq = ? AND userId = ?", arguments: [seq, user])
        }
        let chunks = try Row.fetchAll(
            db,
            sql: """
                SELECT c.broadcastSeq, c.through, c.users FROM broadcastChunk c JOIN broadcast b ON b.seq = c.broadcastSeq
                WHERE b.appId = ? AND EXISTS (SELECT 1 FROM json_each(c.users) WHERE value = ?)
                """, arguments: [app, user])
        for chunk in chunks {
            let (seq, through, text): (Int64, String, String) = (chunk[0], chunk[1], chunk[2])
            let users = try BroadcastJSON.list(text).filter { $0 != user }
            touched.insert(seq)
            if let last = users.last {
                try db.execute(
                    sql: "UPDATE broadcastChunk SET users = ?, through = ? WHERE broadcastSeq = ? AND through = ?",
                    arguments: [try BroadcastJSON.encode(users), last, seq, through])
            } else {
                try db.execute(
                    sql: "DELETE FROM broadcastChunk WHERE broadcastSeq = ? AND through = ?", arguments: [seq, through])
                try completeIfFinished(db, seq: seq, now: now)
            }
        }
        let cursors = try Int64.fetchAll(
            db, sql: "SELECT seq FROM broadcast WHERE appId = ? AND cursor = ?", arguments: [app, user])
        for seq in cursors {
            touched.insert(seq)
            let before =
                try String.fetchOne(
                    db,
                    sql: """
                        SELECT max(userId) FROM (
                            SELECT max(userId) AS userId FROM endpoint WHERE appId = ?1 AND userId < ?2
                            UNION ALL SELECT max(userId) FROM notification WHERE appId = ?1 AND userId < ?2
                            UNION ALL SELECT max(userId) FROM userTag WHERE appId = ?1 AND userId < ?2
                            UNION ALL SELECT max(userId) FROM broadcastUser WHERE broadcastSeq = ?3 AND userId < ?2)
                        """, arguments: [app, user, seq]) ?? ""
            try db.execute(sql: "UPDATE broadcast SET cursor = ? WHERE seq = ?", arguments: [before, seq])
        }
        return touched.count
    }
}
