public import Foundation
public import HubCore
import Logging
import PostgresNIO

// Endpoints: registration, lookup, removal, sync times.
extension PostgresStore {
    /// Registers a new endpoint or refreshes the stored one with the same (app, user, id).
    ///
    /// A refresh replaces every field, with two exceptions:
    /// - an inactive endpoint becomes active (reason and since cleared) only when the token changed
    ///   or `registeredAt` is after its `inactiveSince`; otherwise it stays inactive as it was;
    /// - a refresh without `lastSyncAt` keeps the stored one.
    ///
    /// A non-nil token held by another endpoint of the same app and transport (another user, or
    /// another ID) moves here: that endpoint and its pending deliveries are removed.
    ///
    /// A new endpoint is inserted only when `limit` lets the user have one more: the transaction
    /// takes the user's feed lock (so concurrent registrations of the user wait for each other),
    /// then counts the user's other endpoints (but one whose token moves here).
    ///
    /// - Returns: the endpoint as stored.
    /// - Throws: ``HubError/Code/conflict`` from `limit` when the endpoint is new and the user has
    ///   as many as it allows.
    public func upsertEndpoint(_ endpoint: Endpoint, limit: EndpointLimit) async throws -> Endpoint {
        try Identifier.checkBeforeStoring(endpoint)
        return try await transaction { db in
            let key = FeedKey(appId: endpoint.appId, userId: endpoint.userId)
            var stored = endpoint
            if limit.maxPerUser != nil { try await Self.lockFeed(key, on: db) }
            if let existing = try await Self.fetchEndpoint(key, id: endpoint.id, forUpdate: true, db) {
                if existing.state == .inactive {
                    let revived =
                        existing.token != endpoint.token
                        || existing.inactiveSince.map { endpoint.registeredAt > $0 } ?? true
                    stored.state = revived ? .active : existing.state
                    stored.inactiveReason = revived ? nil : existing.inactiveReason
                    stored.inactiveSince = revived ? nil : existing.inactiveSince
                }
                stored.lastSyncAt = stored.lastSyncAt ?? existing.lastSyncAt
            } else if limit.maxPerUser != nil {
                let token = endpoint.token
                let count = try await db.rows(
                    """
                    SELECT COUNT(*)::bigint FROM hub_endpoint
                    WHERE app_id = \(key.appId) AND user_id = \(key.userId)
                        AND NOT (\(token)::text IS NOT NULL AND transport = \(endpoint.transport.rawValue)
                            AND token = \(token)::text)
                    """)
                let existing = try count.first?.decode(Int64.self) ?? 0
                try limit.check(adding: endpoint.id, existing: Int(existing))
            }
            let e = stored
            let rows = try await db.rows(
                """
                INSERT INTO hub_endpoint (\(unescaped: EndpointColumns.list))
                VALUES (\(e.appId), \(e.userId), \(e.id), \(e.platform.rawValue), \(e.platformAppId),
                    \(e.transport.rawValue), \(e.token), \(e.attributesColumn), \(e.appDisplayName),
                    \(e.state.rawValue), \(e.inactiveReason), \(e.inactiveSince), \(e.registeredAt), \(e.lastSyncAt))
                ON CONFLICT (app_id, user_id, id) DO UPDATE SET
                    platform = EXCLUDED.platform, platform_app_id = EXCLUDED.platform_app_id,
                    transport = EXCLUDED.transport, token = EXCLUDED.token, environment = EXCLUDED.environment,
                    app_display_name = EXCLUDED.app_display_name, state = EXCLUDED.state,
                    inactive_reason = EXCLUDED.inactive_reason, inactive_since = EXCLUDED.inactive_since,
                    registered_at = EXCLUDED.registered_at, last_sync_at = EXCLUDED.last_sync_at
                RETURNING \(unescaped: EndpointColumns.list)
                """)
            guard let row = rows.first else {
                throw PostgresStoreError(.server, "saving endpoint \(e.id) returned no row")
            }
            if let token = endpoint.token {
                // The token's previous holders lose it: their pending deliveries go, then they do.
                try await db.rows(
                    """
                    WITH holders AS (
                        DELETE FROM hub_endpoint
                        WHERE app_id = \(e.appId) AND transport = \(e.transport.rawValue) AND token = \(token)
                            AND NOT (user_id = \(e.userId) AND id = \(e.id))
                        RETURNING app_id, user_id, id
                    )
                    DELETE FROM hub_delivery d USING holders h
                    WHERE d.app_id = h.app_id AND d.user_id = h.user_id AND d.endpoint_id = h.id
                        AND d.state = 'pending'
                    """)
            }
            return try Endpoint(row: row)
        }
    }

    /// One endpoint of the user.
    public func endpoint(_ key: FeedKey, id: String) async throws -> Endpoint? {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(id)
            """
        ).first.map { try Endpoint(row: $0) }
    }

    /// The user's endpoints (active and inactive), ordered by ID.
    public func endpoints(_ key: FeedKey) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(key)
        return try await rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) ORDER BY id COLLATE "C"
            """
        ).map { try Endpoint(row: $0) }
    }

    /// All endpoints of an app, optionally only those in `state` (the feedback list:
    /// `.inactive`), ordered by user, then ID.
    public func endpoints(appId: String, state: EndpointState?) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        return try await rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE app_id = \(appId) AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
            ORDER BY user_id COLLATE "C", id COLLATE "C"
            """
        ).map { try Endpoint(row: $0) }
    }

    /// Up to `limit` of the app's endpoints after `after`, optionally only those in `state`,
    /// ordered by user, then ID (bytewise).
    public func endpoints(
        appId: String, state: EndpointState?, after: EndpointPosition?, limit: Int
    ) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let afterUser = after?.userId
        let afterID = after?.endpointId
        return try await rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE app_id = \(appId) AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
                AND (\(afterUser)::text IS NULL
                    OR (user_id COLLATE "C", id COLLATE "C") > (\(afterUser)::text COLLATE "C", \(afterID)::text COLLATE "C"))
            ORDER BY user_id COLLATE "C", id COLLATE "C"
            LIMIT \(Int64(max(0, limit)))
            """
        ).map { try Endpoint(row: $0) }
    }

    /// Removes the endpoint and its pending deliveries (finished ones stay for statistics).
    /// - Returns: whether it existed.
    public func deleteEndpoint(_ key: FeedKey, id: String) async throws -> Bool {
        try Identifier.checkBeforeStoring(key, id: id)
        return try await transaction { db in
            try await db.rows(
                """
                DELETE FROM hub_delivery
                WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND endpoint_id = \(id) AND state = 'pending'
                """)
            return try await !db.rows(
                """
                DELETE FROM hub_endpoint WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(id)
                RETURNING id
                """
            ).isEmpty
        }
    }

    /// Records when the endpoint last synced its feed. Unknown endpoints are ignored.
    public func touchEndpoint(_ key: FeedKey, id: String, syncedAt: Date) async throws {
        try Identifier.checkBeforeStoring(key, id: id)
        _ = try await rows(
            """
            UPDATE hub_endpoint SET last_sync_at = \(syncedAt)
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(id)
            """)
    }
}

// MARK: - Helpers

extension PostgresStore {
    static func fetchEndpoint(
        _ key: FeedKey, id: String, forUpdate: Bool, _ db: Session
    ) async throws -> Endpoint? {
        try await db.rows(
            """
            SELECT \(unescaped: EndpointColumns.list) FROM hub_endpoint
            WHERE app_id = \(key.appId) AND user_id = \(key.userId) AND id = \(id)
            \(unescaped: forUpdate ? "FOR UPDATE" : "")
            """
        ).first.map { try Endpoint(row: $0) }
    }
}
