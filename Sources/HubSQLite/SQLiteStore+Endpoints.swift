public import Foundation
import GRDB
public import HubCore

// Endpoints: registration, lookup, removal, sync times.
extension SQLiteStore {
    /// Registers a new endpoint or refreshes the stored one with the same (appId, userId, id).
    ///
    /// A refresh replaces every field, with two exceptions:
    /// - an inactive endpoint becomes active (reason and since cleared) only when the token changed
    ///   or `registeredAt` is after its `inactiveSince`; otherwise it stays inactive as it was;
    /// - a refresh without `lastSyncAt` keeps the stored one.
    ///
    /// A non-nil token held by another endpoint of the same app and transport (another user, or
    /// another ID) moves here: that endpoint and its pending deliveries are removed.
    ///
    /// A new endpoint is inserted only when `limit` lets the user have one more: the user's other
    /// endpoints (but one whose token moves here) are counted in the same write transaction.
    ///
    /// - Returns: the endpoint as stored.
    /// - Throws: ``HubError/Code/conflict`` from `limit` when the endpoint is new and the user has
    ///   as many as it allows.
    public func upsertEndpoint(_ endpoint: Endpoint, limit: EndpointLimit) async throws -> Endpoint {
        try Identifier.checkBeforeStoring(endpoint)
        return try await write { db in try Self.upsertEndpoint(endpoint, limit: limit, db) }
    }

    /// Registers or refreshes every endpoint of `endpoints`, each as
    /// ``upsertEndpoint(_:limit:)`` would, in order, in one transaction (one commit, however many):
    /// for loading many endpoints at once (a migration, a benchmark's million users). A failing
    /// endpoint fails the whole call and nothing of it is stored.
    /// - Returns: the endpoints as stored, in order.
    public func upsertEndpoints(_ endpoints: [Endpoint], limit: EndpointLimit) async throws -> [Endpoint] {
        for endpoint in endpoints { try Identifier.checkBeforeStoring(endpoint) }
        return try await write { db in try endpoints.map { try Self.upsertEndpoint($0, limit: limit, db) } }
    }

    /// ``upsertEndpoint(_:limit:)`` inside a write transaction.
    private static func upsertEndpoint(_ endpoint: Endpoint, limit: EndpointLimit, _ db: Database) throws -> Endpoint {
        let key = FeedKey(appId: endpoint.appId, userId: endpoint.userId)
        var stored = Self.canonical(endpoint)
        if let existing = try Self.fetchEndpoint(db, key, id: endpoint.id) {
            if existing.state == .inactive {
                let revived =
                    existing.token != endpoint.token
                    || existing.inactiveSince.map { endpoint.registeredAt > $0 } ?? true
                if revived {
                    stored.state = .active
                    stored.inactiveReason = nil
                    stored.inactiveSince = nil
                } else {
                    stored.state = existing.state
                    stored.inactiveReason = existing.inactiveReason
                    stored.inactiveSince = existing.inactiveSince
                }
            }
            stored.lastSyncAt = stored.lastSyncAt ?? existing.lastSyncAt
            try EndpointRecord(stored).update(db)
        } else {
            if limit.maxPerUser != nil {
                let existing =
                    try Int.fetchOne(
                        db.cachedStatement(
                            sql: """
                                SELECT COUNT(*) FROM endpoint WHERE appId = ? AND userId = ?
                                    AND NOT (? IS NOT NULL AND transport = ? AND token = ?)
                                """),
                        arguments: [
                            key.appId, key.userId, endpoint.token, endpoint.transport.rawValue, endpoint.token,
                        ]) ?? 0
                try limit.check(adding: endpoint.id, existing: existing)
            }
            try EndpointRecord(stored).insert(db)
        }

        if let token = endpoint.token {
            let holders = try EndpointRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM endpoint WHERE appId = ? AND transport = ? AND token = ?
                            AND NOT (userId = ? AND id = ?)
                        """),
                arguments: [endpoint.appId, endpoint.transport.rawValue, token, endpoint.userId, endpoint.id])
            for holder in holders.map(\.endpoint) {
                try Self.removeEndpoint(db, FeedKey(appId: holder.appId, userId: holder.userId), id: holder.id)
            }
        }
        return stored
    }

    /// One endpoint of the user.
    public func endpoint(_ key: FeedKey, id: String) async throws -> Endpoint? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await read { db in try Self.fetchEndpoint(db, key, id: id) }
    }

    /// The user's endpoints (active and inactive), ordered by ID.
    public func endpoints(_ key: FeedKey) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(key)
        return try await read { db in
            try EndpointRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM endpoint WHERE appId = ? AND userId = ? ORDER BY id"),
                arguments: [key.appId, key.userId]
            ).map(\.endpoint)
        }
    }

    /// All endpoints of an app, optionally only those in `state` (the feedback list:
    /// `.inactive`), ordered by user, then ID.
    public func endpoints(appId: String, state: EndpointState?) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        return try await read { db in
            if let state {
                return try EndpointRecord.fetchAll(
                    db.cachedStatement(sql: "SELECT * FROM endpoint WHERE appId = ? AND state = ? ORDER BY userId, id"),
                    arguments: [appId, state.rawValue]
                ).map(\.endpoint)
            }
            return try EndpointRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM endpoint WHERE appId = ? ORDER BY userId, id"),
                arguments: [appId]
            ).map(\.endpoint)
        }
    }

    /// Up to `limit` of the app's endpoints after `after`, optionally only those in `state`,
    /// ordered by user, then ID (bytewise), read through the (appId, userId, id) key.
    public func endpoints(
        appId: String, state: EndpointState?, after: EndpointPosition?, limit: Int
    ) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        return try await read { db in
            try EndpointRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM endpoint WHERE appId = ?
                            AND (? IS NULL OR userId > ? OR (userId = ? AND id > ?))
                            AND (? IS NULL OR state = ?)
                        ORDER BY userId, id LIMIT ?
                        """),
                arguments: [
                    appId, after?.userId, after?.userId, after?.userId, after?.endpointId, state?.rawValue,
                    state?.rawValue, max(0, limit),
                ]
            ).map(\.endpoint)
        }
    }

    /// Removes the endpoint and its pending deliveries (finished ones stay for statistics).
    /// - Returns: whether it existed.
    public func deleteEndpoint(_ key: FeedKey, id: String) async throws -> Bool {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await write { db in try Self.removeEndpoint(db, key, id: id) }
    }

    /// Records when the endpoint last synced its feed. Unknown endpoints are ignored.
    public func touchEndpoint(_ key: FeedKey, id: String, syncedAt: Date) async throws {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await write(.relaxed) { db in
            try db.cachedStatement(sql: "UPDATE endpoint SET lastSyncAt = ? WHERE appId = ? AND userId = ? AND id = ?")
                .execute(arguments: [syncedAt.storedSeconds, key.appId, key.userId, id])
        }
    }
}

// MARK: - Helpers

extension SQLiteStore {
    static func fetchEndpoint(_ db: Database, _ key: FeedKey, id: String) throws -> Endpoint? {
        try EndpointRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM endpoint WHERE appId = ? AND userId = ? AND id = ?"),
            arguments: [key.appId, key.userId, id]
        )?.endpoint
    }

    /// The user's active endpoints, ordered by ID (what the delivery planner plans for).
    static func activeEndpoints(_ db: Database, _ key: FeedKey) throws -> [Endpoint] {
        var endpoints: [Endpoint] = []
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: EndpointRecord.activeQuery),
            arguments: [key.appId, key.userId])
        while let row = try rows.next() { endpoints.append(EndpointRecord(positional: row).endpoint) }
        return endpoints
    }

    /// Deletes an endpoint and its pending deliveries. Returns whether it existed.
    @discardableResult
    static func removeEndpoint(_ db: Database, _ key: FeedKey, id: String) throws -> Bool {
        try deletePendingDeliveries(db, of: key, endpointId: id)
        try db.cachedStatement(sql: "DELETE FROM endpoint WHERE appId = ? AND userId = ? AND id = ?").execute(
            arguments: [key.appId, key.userId, id])
        return db.changesCount > 0
    }

    /// `endpoint` with every time as it reads back from the database.
    static func canonical(_ endpoint: Endpoint) -> Endpoint {
        var copy = endpoint
        copy.inactiveSince = copy.inactiveSince?.canonical
        copy.registeredAt = copy.registeredAt.canonical
        copy.lastSyncAt = copy.lastSyncAt?.canonical
        return copy
    }
}
