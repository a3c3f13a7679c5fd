import HubCore
import Logging
import PostgresNIO

// Change versions, and why they need a lock.
//
// Versions come from the sequence `hub_change_version` (store-wide, so one cursor value means
// one position in every feed). A sequence alone is not enough: `nextval` is not transactional,
// so with two concurrent changes of one feed, T1 may take 10 and T2 11, T2 commit first, and a
// device syncing in between read 11, move its cursor past 10 and never see T1's change.
//
// The fix: every transaction that takes a version first takes a transaction-level advisory lock
// on its feed, `pg_advisory_xact_lock(feedLockSpace, hashtext(app ‖ user))`, and only then calls
// `nextval` — in a *later statement*, because at READ COMMITTED each statement reads a snapshot
// taken when it starts. The lock is released at commit or rollback, after the commit is
// visible. So within one feed, a version is only handed out after every earlier holder of the
// feed has committed or rolled back: a reader sees a feed's versions appear in increasing order.
// Different feeds do not wait for each other (two feeds hashing to one key merely share a lock).
//
// Cost: one extra statement (a round trip) per change — publishes save it: a function takes
// their locks and then reads in the same round trip (`LockAndReadForPublish`) — and changes of
// the *same* feed are serialized, each waiting for the previous one's commit (including its WAL
// flush); changes of different feeds run and group-commit in parallel. The alternative — one
// counter row updated with `UPDATE … RETURNING` — is simpler but serializes every change of the
// whole store behind one row lock held until commit, so throughput would be bounded by one WAL
// flush at a time.
//
// The sweep changes many feeds in one transaction; it locks them in one statement, in a fixed
// order (app, then user), in batches of `sweepBatch` feeds so that it never exhausts the
// server's lock table (`max_locks_per_transaction`).
extension PostgresStore {
    /// The first key of every feed lock: "HB" and 1, to stay clear of other advisory locks.
    static let feedLockSpace: Int32 = 0x4842_0001
    /// The first key of the migration lock.
    static let migrationLockSpace: Int32 = 0x4842_0000
    /// Feeds locked by one sweep transaction at most.
    static let sweepBatch = 100

    /// Locks the feed `key` until the end of the current transaction. Call before taking a
    /// change version, and run the statements that read or write the feed after it returns.
    static func lockFeed(_ key: FeedKey, on db: Session) async throws {
        var binds = PostgresBindings(capacity: 3)
        binds.append(feedLockSpace)
        binds.append(key.appId)
        binds.append(key.userId)
        try await db.run(LockFeed.self, binds)
    }

    enum LockFeed: NamedStatement {
        static let name = "hub_lock_feed"
        static let sql = "SELECT pg_advisory_xact_lock($1::integer, hashtext($2::text || E'\\n' || $3::text))"
    }

    /// Locks several feeds until the end of the current transaction, in the order given (callers
    /// sort them the same way everywhere, so two multi-feed transactions never deadlock: the
    /// sweep's order, app then user, bytewise; see ``sweepOrder(_:)``).
    static func lockFeeds(_ keys: [FeedKey], on db: Session) async throws {
        guard !keys.isEmpty else { return }
        var binds = PostgresBindings(capacity: 3)
        binds.append(feedLockSpace)
        binds.append(keys.map(\.appId))
        binds.append(keys.map(\.userId))
        try await db.run(LockFeeds.self, binds)
    }

    /// `keys` in the order the sweep locks feeds (app, then user, bytewise: `COLLATE "C"`).
    static func sweepOrder(_ keys: [FeedKey]) -> [FeedKey] {
        keys.sorted { a, b in
            a.appId == b.appId
                ? a.userId.utf8.lexicographicallyPrecedes(b.userId.utf8)
                : a.appId.utf8.lexicographicallyPrecedes(b.appId.utf8)
        }
    }

    /// Locks the feeds `($2[i], $3[i])` in the order given.
    enum LockFeeds: NamedStatement {
        static let name = "hub_lock_feeds"
        static let sql = """
            SELECT pg_advisory_xact_lock($1::integer, hashtext(f.app_id || E'\\n' || f.user_id))
            FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS f(app_id, user_id, position)
            ORDER BY f.position
            """
    }

    /// Locks the feeds of the pending deliveries `ids` until the end of the current transaction,
    /// in the order of the sweep (app, then user, bytewise), so that it never deadlocks with it.
    static func lockFeeds(ofDeliveries ids: [Int64], on db: Session) async throws {
        guard !ids.isEmpty else { return }
        try await db.rows(
            """
            SELECT pg_advisory_xact_lock(\(feedLockSpace), hashtext(f.app_id || E'\\n' || f.user_id))
            FROM (
                SELECT DISTINCT app_id COLLATE "C" AS app_id, user_id COLLATE "C" AS user_id FROM hub_delivery
                WHERE id = ANY(\(ids)) AND state = 'pending'
                ORDER BY 1, 2
            ) AS f
            """)
    }
}
