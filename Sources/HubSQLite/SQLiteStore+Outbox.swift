public import Foundation
import GRDB
public import HubCore

// The delivery outbox: enqueueing (inside notification transactions), claiming with leases,
// finishing, retrying, and statistics.
extension SQLiteStore {
    /// Leases up to `limit` due deliveries to `owner` until `leaseUntil`.
    ///
    /// Due: pending, `dueAt <= now`, and not leased or with a lease that ended before `now` (a
    /// crashed or slow owner's deliveries are taken over). Order: priority (high first), then
    /// `dueAt`, then ID. Each claimed row gets `attempts + 1`. A row whose endpoint was removed or
    /// is inactive is finished as `superseded` and not returned, so fewer than `limit` may come back
    /// even when more are due.
    public func claimDeliveries(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        return try await write { db in
            let now = now.canonical
            let due = try DeliveryRecord.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM delivery
                        WHERE state = 'pending' AND dueAt <= ? AND (leaseOwner IS NULL OR leaseUntil < ?)
                        ORDER BY urgency DESC, dueAt, id
                        LIMIT ?
                        """),
                arguments: [now.storedSeconds, now.storedSeconds, limit])
            var claimed: [ClaimedDelivery] = []
            for var record in due {
                let key = FeedKey(appId: record.appId, userId: record.userId)
                guard let endpoint = try Self.fetchEndpoint(db, key, id: record.endpointId),
                    endpoint.state == .active
                else {
                    record.finish(.superseded, detail: "The endpoint was removed or is inactive.", at: now)
                    try record.update(db)
                    continue
                }
                record.leaseOwner = owner
                record.leaseUntil = leaseUntil.canonical
                record.claimedAt = now
                record.attempts += 1
                try record.update(db)
                let notification = try record.notificationId.flatMap { try Self.fetchNotification(db, key, id: $0) }
                claimed.append(
                    ClaimedDelivery(delivery: record.delivery, endpoint: endpoint, notification: notification))
            }
            return claimed
        }
    }

    /// Records the final outcome of a delivery (lease cleared, `finishedAt = now`). Unknown or
    /// already finished deliveries are left alone.
    ///
    /// `.endpointGone` also deactivates the endpoint (`inactiveReason = detail`,
    /// `inactiveSince = goneSince ?? now`) and finishes its other pending deliveries as
    /// `superseded` — unless the endpoint registered again after the provider's verdict: after
    /// `goneSince`, or, when the provider gave no time, after the delivery was claimed.
    public func finishDelivery(
        id: Int64, result: DeliveryResult, detail: String?, goneSince: Date?, at now: Date
    ) async throws {
        try await write { db in
            let now = now.canonical
            guard
                var record = try DeliveryRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM delivery WHERE id = ?"), arguments: [id]),
                record.state == .pending
            else { return }
            record.finish(result, detail: detail, at: now)
            try record.update(db)
            guard result == .endpointGone else { return }

            let key = FeedKey(appId: record.appId, userId: record.userId)
            guard var endpoint = try Self.fetchEndpoint(db, key, id: record.endpointId),
                endpoint.state == .active
            else { return }
            let verdictTime = goneSince ?? record.claimedAt ?? now
            guard endpoint.registeredAt <= verdictTime else { return }
            endpoint.state = .inactive
            endpoint.inactiveReason = detail
            endpoint.inactiveSince = (goneSince ?? now).canonical
            try EndpointRecord(endpoint).update(db)
            try Self.finishPendingDeliveries(
                db, of: endpoint, result: .superseded, detail: "The endpoint became inactive.", at: now)
        }
    }

    /// Returns a claimed delivery to the queue: lease cleared, due again at `dueAt`, `lastError`
    /// recorded (the attempt was counted by the claim). Unknown or finished deliveries are left
    /// alone. A shoulder tap whose endpoint got a newer pending tap meanwhile is finished as
    /// `superseded` instead (that tap announces a newer version), passing on its priority.
    public func retryDelivery(id: Int64, dueAt: Date, error: String, at now: Date) async throws {
        try await write { db in
            guard
                var record = try DeliveryRecord.fetchOne(
                    db.cachedStatement(sql: "SELECT * FROM delivery WHERE id = ?"), arguments: [id]),
                record.state == .pending
            else { return }
            if record.kind == .shoulderTap, var newer = try Self.pendingTap(db, endpointOf: record), newer.id != id {
                newer.priority = newer.priority.higher(record.priority)
                try newer.update(db)
                record.lastError = error
                record.finish(.superseded, detail: "A newer tap to the endpoint replaced it.", at: now.canonical)
                try record.update(db)
                return
            }
            record.leaseOwner = nil
            record.leaseUntil = nil
            record.dueAt = dueAt.canonical
            record.lastError = error
            try record.update(db)
        }
    }

    /// Puts back the deliveries `owner` had claimed when it stopped without finishing them (a
    /// crash), so a restarted instance of the same name sends them at once instead of waiting for
    /// the leases to expire. A released tap whose endpoint has a newer pending tap is superseded.
    public func releaseLeases(owner: String) async throws {
        try await write { db in
            let leased = try DeliveryRecord.filter(sql: "state = 'pending' AND leaseOwner = ?", arguments: [owner])
                .fetchAll(db)
            for var record in leased {
                if record.kind == .shoulderTap, var newer = try Self.pendingTap(db, endpointOf: record),
                    newer.id != record.id
                {
                    newer.priority = newer.priority.higher(record.priority)
                    try newer.update(db)
                    record.finish(.superseded, detail: "A newer tap to the endpoint replaced it.", at: Date().canonical)
                } else {
                    record.leaseOwner = nil
                    record.leaseUntil = nil
                }
                try record.update(db)
            }
        }
    }

    /// The earliest time a pending delivery becomes claimable: its `dueAt`, or for a leased one
    /// the later of `dueAt` and `leaseUntil`. `nil` when nothing is pending.
    public func nextDueDate() async throws -> Date? {
        try await read { db in
            try Double.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT MIN(CASE WHEN leaseOwner IS NULL THEN dueAt ELSE MAX(dueAt, IFNULL(leaseUntil, dueAt)) END)
                        FROM delivery WHERE state = 'pending'
                        """)
            ).map(Date.init(storedSeconds:))
        }
    }

    /// Pending deliveries, and finished ones by transport, then result.
    public func deliveryStatistics() async throws -> DeliveryStatistics {
        try await read { db in
            let pending =
                try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM delivery WHERE state = 'pending'")) ?? 0
            var finished: [String: [String: Int]] = [:]
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT transport, IFNULL(result, '') AS result, COUNT(*) AS count
                        FROM delivery WHERE state = 'finished' GROUP BY transport, result
                        """))
            for row in rows {
                finished[row["transport"], default: [:]][row["result"]] = row["count"]
            }
            return DeliveryStatistics(pending: pending, finished: finished)
        }
    }
}

// MARK: - Enqueueing (called inside write transactions)

extension SQLiteStore {
    /// The endpoint's pending, unleased shoulder tap, if any (at most one, by a unique index).
    static func pendingTap(_ db: Database, endpointOf record: DeliveryRecord) throws -> DeliveryRecord? {
        try DeliveryRecord.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM delivery
                    WHERE appId = ? AND userId = ? AND endpointId = ?
                        AND state = 'pending' AND kind = 'shoulderTap' AND leaseOwner IS NULL
                    """),
            arguments: [record.appId, record.userId, record.endpointId])
    }

    /// Announces `notification`'s change to `endpoint` with a shoulder tap, coalescing into the
    /// endpoint's pending, unleased tap when there is one (newest version and notification, the
    /// higher priority, the earlier due time).
    static func enqueueTap(_ db: Database, to endpoint: Endpoint, for notification: UserNotification, now: Date) throws
    {
        var tap = DeliveryRecord(
            to: endpoint, kind: .shoulderTap, notificationId: notification.id,
            changeVersion: notification.changeVersion, priority: notification.priority, createdAt: now, dueAt: now)
        if var pending = try pendingTap(db, endpointOf: tap) {
            pending.changeVersion = tap.changeVersion
            pending.notificationId = tap.notificationId
            pending.priority = pending.priority.higher(tap.priority)
            pending.dueAt = min(pending.dueAt, now)
            try pending.update(db)
        } else {
            try tap.insert(db)
        }
    }

    /// Schedules the fallback alert of a high-priority notification with a fallback policy to a
    /// non-polling endpoint, due `timeoutSeconds` after `now`. Nothing otherwise.
    static func enqueueFallback(
        _ db: Database, _ notification: UserNotification, to endpoint: Endpoint, now: Date
    ) throws {
        guard notification.priority == .high, let policy = notification.fallbackPolicy,
            endpoint.transport != .polling
        else { return }
        var fallback = DeliveryRecord(
            to: endpoint, kind: .fallback, notificationId: notification.id, changeVersion: notification.changeVersion,
            priority: notification.priority, createdAt: now,
            dueAt: now.addingTimeInterval(TimeInterval(policy.timeoutSeconds)).canonical)
        try fallback.insert(db)
    }

    /// Taps every active endpoint of the notification's user but `except`.
    static func tapAll(_ db: Database, about notification: UserNotification, except: String?, now: Date) throws {
        let key = FeedKey(appId: notification.appId, userId: notification.userId)
        for endpoint in try activePushEndpoints(db, key) where endpoint.id != except {
            try enqueueTap(db, to: endpoint, for: notification, now: now)
        }
    }

    /// Finishes every pending delivery of `endpoint` with `result`.
    static func finishPendingDeliveries(
        _ db: Database, of endpoint: Endpoint, result: DeliveryResult, detail: String?, at now: Date
    ) throws {
        try db.cachedStatement(
            sql: """
                UPDATE delivery
                SET state = 'finished', result = ?, detail = ?, finishedAt = ?, leaseOwner = NULL, leaseUntil = NULL
                WHERE appId = ? AND userId = ? AND endpointId = ? AND state = 'pending'
                """
        ).execute(arguments: [result.rawValue, detail, now.storedSeconds, endpoint.appId, endpoint.userId, endpoint.id])
    }

    /// Removes every pending delivery of an endpoint (the endpoint is being removed).
    static func deletePendingDeliveries(_ db: Database, of key: FeedKey, endpointId: String) throws {
        try db.cachedStatement(
            sql: "DELETE FROM delivery WHERE appId = ? AND userId = ? AND endpointId = ? AND state = 'pending'"
        ).execute(arguments: [key.appId, key.userId, endpointId])
    }
}

extension DeliveryRecord {
    /// Marks the row finished with `result`; the lease ends.
    mutating func finish(_ result: DeliveryResult, detail: String?, at now: Date) {
        state = .finished
        self.result = result
        self.detail = detail
        finishedAt = now
        leaseOwner = nil
        leaseUntil = nil
    }
}
