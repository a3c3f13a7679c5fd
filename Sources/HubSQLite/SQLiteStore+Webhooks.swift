public import Foundation
import GRDB
public import HubCore

// The webhook lane of the outbox (``WebhookStore``): enqueueing events, claiming them in order
// per user, and the console's summary. Their outcomes are the outbox's (SQLiteStore+Outbox.swift).
extension SQLiteStore {
    public func enqueueWebhookEvents(_ rows: [WebhookDelivery], at now: Date) async throws {
        guard !rows.isEmpty else { return }
        try await write { db in try Self.insertWebhookEvents(db, rows, at: now.canonical) }
    }

    public func recordOutcomes(
        _ outcomes: [OutboxOutcome], enqueueing rows: [WebhookDelivery], at now: Date
    ) async throws {
        try await write(.relaxed) { db in
            try Self.recordOutcomes(db, outcomes)
            try Self.insertWebhookEvents(db, rows, at: now.canonical)
        }
    }

    /// Inserts one pending outbox row and its event per item of `rows`, due at `now`.
    static func insertWebhookEvents(_ db: Database, _ rows: [WebhookDelivery], at now: Date) throws {
        for row in rows {
            var record = DeliveryRecord(
                to: ClaimedDelivery.webhookEndpoint(
                    of: Delivery(
                        id: 0, appId: row.event.appId, userId: row.event.userId, endpointId: row.outboxEndpointId,
                        kind: .webhook, notificationId: nil, changeVersion: 0, priority: .none, createdAt: now,
                        dueAt: now)),
                kind: .webhook, notificationId: nil, changeVersion: 0, priority: .none, createdAt: now, dueAt: now)
            try record.insert(db)
            try db.cachedStatement(
                sql: "INSERT INTO webhookEvent (deliveryId, eventId, type, body) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [db.lastInsertedRowID, row.event.id, row.event.type.rawValue, row.event.body])
        }
    }

    public func claimWebhookEvents(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        let now = now.canonical
        let candidates = """
            FROM delivery AS d INDEXED BY delivery_lane
            WHERE d.state = 'pending' AND d.suspendedAt IS NULL AND d.transport = 'webhooks' AND d.dueAt <= ?1
                AND (d.leaseOwner IS NULL OR d.leaseUntil < ?1)
                AND \(OutboxMachine.webhookOrder(table: "delivery", row: "d", column: { $0 }))
            """
        let anyDue = try await read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 \(candidates))"), arguments: [now.storedSeconds])
                ?? false
        }
        guard anyDue else { return [] }
        return try await write(.relaxed) { db in
            let ids = try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE delivery SET leaseOwner = ?2, leaseUntil = ?3, claimedAt = ?1, attempts = attempts + 1
                        WHERE id IN (SELECT d.id \(candidates) ORDER BY d.dueAt, d.id LIMIT ?4)
                        RETURNING id
                        """),
                arguments: [now.storedSeconds, owner, leaseUntil.canonical.storedSeconds, limit])
            guard !ids.isEmpty else { return [] }
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT d.*, w.eventId, w.type, w.body FROM delivery d
                        JOIN webhookEvent w ON w.deliveryId = d.id
                        WHERE d.id IN (SELECT value FROM json_each(?)) ORDER BY d.dueAt, d.id
                        """),
                arguments: [JSONText.array(ids.map(JSONText.number))],
                adapter: ScopeAdapter([
                    "delivery": RangeRowAdapter(0..<Self.deliveryColumns),
                    "event": SuffixRowAdapter(fromIndex: Self.deliveryColumns),
                ]))
            return rows.map { row in
                let delivery = DeliveryRecord(row: row.scopes["delivery"]!).delivery
                let event = row.scopes["event"]!
                return ClaimedDelivery(
                    delivery: delivery, endpoint: ClaimedDelivery.webhookEndpoint(of: delivery), notification: nil,
                    event: WebhookEvent(
                        id: event["eventId"], type: WebhookEventType(rawValue: event["type"]), appId: delivery.appId,
                        userId: delivery.userId, timestamp: delivery.createdAt, body: event["body"]))
            }
        }
    }

    /// The columns of a `delivery` row (`d.*`) since `v6`; see ``claimedAdapter``.
    static let deliveryColumns = 25

    public func webhookSummary(appId: String, since: Date, failures: Int) async throws -> [WebhookSummary] {
        try await read { db in
            var summaries: [String: WebhookSummary] = [:]
            let counts = try Row.fetchAll(
                db,
                sql: """
                    SELECT endpointId,
                        SUM(state = 'finished' AND result = 'delivered' AND finishedAt >= ?2),
                        SUM(state = 'finished' AND result IN ('gaveUp', 'rejected') AND finishedAt >= ?2),
                        SUM(state = 'pending')
                    FROM delivery WHERE transport = 'webhooks' AND appId = ?1 GROUP BY endpointId
                    """, arguments: [appId, since.storedSeconds])
            for row in counts {
                let endpointId: String = row[0]
                let webhook = String(endpointId.dropFirst(Webhook.outboxPrefix.count))
                summaries[webhook] = WebhookSummary(
                    webhook: webhook, delivered: (row[1] as Int?) ?? 0, failed: (row[2] as Int?) ?? 0,
                    pending: (row[3] as Int?) ?? 0,
                    lastFailures: [])
            }
            let failed = try Row.fetchAll(
                db,
                sql: """
                    SELECT endpointId, COALESCE(finishedAt, claimedAt, createdAt), COALESCE(detail, lastError)
                    FROM delivery
                    WHERE transport = 'webhooks' AND appId = ?
                        AND ((state = 'pending' AND lastError IS NOT NULL) OR result IN ('gaveUp', 'rejected'))
                    ORDER BY COALESCE(finishedAt, claimedAt, createdAt) DESC, id DESC LIMIT ?
                    """, arguments: [appId, max(0, failures) * max(1, summaries.count)])
            for row in failed {
                let endpointId: String = row[0]
                let webhook = String(endpointId.dropFirst(Webhook.outboxPrefix.count))
                guard var summary = summaries[webhook], summary.lastFailures.count < failures else { continue }
                summary.lastFailures.append((Date(storedSeconds: row[1]), (row[2] as String?) ?? ""))
                summaries[webhook] = summary
            }
            return summaries.values.sorted { $0.webhook < $1.webhook }
        }
    }
}
