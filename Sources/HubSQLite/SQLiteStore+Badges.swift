import Foundation
import GRDB
public import HubCore

// Badge counters (`badgeCounter`), kept in the transaction of every change of a notification.
extension SQLiteStore {
    /// The badge of a device of `platform`: the sum of the user's counters of its scopes
    /// (``BadgeCount/scopes(for:)``), one read of at most two rows.
    public func badgeCount(_ key: FeedKey, platform: Platform) async throws -> Int {
        try Identifier.checkBeforeStoring(key)
        let scopes = BadgeCount.scopes(for: platform)
        return try await read { db in
            let counters = try Int.fetchAll(
                db.cachedStatement(
                    sql: "SELECT unread FROM badgeCounter WHERE appId = ? AND userId = ? AND scope IN (?, ?)"),
                arguments: [key.appId, key.userId, scopes[0], scopes[1]])
            return BadgeCount.badge(fromCounters: counters)
        }
    }

    /// Moves the badge counters as a change of a notification from `before` to `after` does
    /// (``BadgeCount/changes(from:to:)``); call inside the change's write transaction.
    static func countBadge(from before: UserNotification?, to after: UserNotification, _ db: Database) throws {
        for delta in BadgeCount.changes(from: before, to: after) {
            try db.cachedStatement(
                sql: """
                    INSERT INTO badgeCounter (appId, userId, scope, unread) VALUES (?, ?, ?, ?)
                    ON CONFLICT (appId, userId, scope) DO UPDATE SET unread = unread + excluded.unread
                    """
            ).execute(arguments: [delta.appId, delta.userId, delta.scope, delta.delta])
        }
    }
}
