public import Foundation
public import HubCore
import PostgresNIO

// The webhook lane of the outbox (``HubCore/WebhookStore``): enqueueing events, claiming them in
// order per user, and the console's summary. Their outcomes are the outbox's (PostgresStore+Outbox.swift).
extension PostgresStore {
    /// Version 11: webhook events. Their outbox rows are `hub_delivery` rows of transport `webhooks`;
    /// `hub_webhook_event` held each row's event and went with its row (`ON DELETE CASCADE`);
    /// since version 12 the event is the row's `event_id`, `event_type` and `event_body`.
    /// `hub_delivery_endpoint` finds the older pending events of a user and webhook
    /// (``HubCore/OutboxMachine/webhookOrder(table:row:column:)``); `hub_delivery_webhook` serves
    /// the summary per webhook.
    static let schemaV11 = [
        """
        CREATE TABLE hub_webhook_event (
            delivery_id bigint PRIMARY KEY REFERENCES hub_delivery (id) ON DELETE CASCADE,
            event_id text NOT NULL,
            type text NOT NULL,
            body text NOT NULL
        )
        """,
        """
        CREATE INDEX hub_delivery_webhook ON hub_delivery (app_id, endpoint_id, state, finished_at)
            WHERE transport = 'webhooks'
        """,
    ]

    public func enqueueWebhookEvents(_ rows: [WebhookDelivery], at now: Date) async throws {
        guard !rows.isEmpty else { return }
        let binds = Self.webhookBinds(rows, at: now)
        _ = try await withSession { session in try await session.run(InsertWebhookEvents.self, binds) }
    }

    public func recordOutcomes(
        _ outcomes: [OutboxOutcome], enqueueing rows: [WebhookDelivery], at now: Date
    ) async throws {
        let (finish, perRow) = Self.split(outcomes)
        let binds = Self.webhookBinds(rows, at: now)
        try await transaction { db in
            try await Self.record(finish: finish, perRow: perRow, db)
            if !rows.isEmpty { try await db.run(InsertWebhookEvents.self, binds) }
        }
    }

    static func webhookBinds(_ rows: [WebhookDelivery], at now: Date) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 7)
        binds.append(rows.map(\.event.appId))
        binds.append(rows.map(\.event.userId))
        binds.append(rows.map(\.outboxEndpointId))
        binds.append(rows.map(\.event.id))
        binds.append(rows.map(\.event.type.rawValue))
        binds.append(rows.map(\.event.body))
        binds.append(now)
        return binds
    }

    /// Inserts one pending outbox row with its event per element of the arrays, in their order
    /// (IDs drawn from the outbox's sequence in that order), due at `$7`.
    enum InsertWebhookEvents: NamedStatement {
        static let name = "hub_insert_webhook_events_v2"
        static let sql = """
            INSERT INTO hub_delivery (app_id, user_id, endpoint_id, transport, kind, notification_id,
                change_version, priority, urgency, state, attempts, created_at, due_at, event_id, event_type, event_body)
            SELECT app_id, user_id, endpoint_id, 'webhooks', 'webhook', NULL, 0, 'none', 0, 'pending', 0, $7, $7,
                event_id, type, body
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY
                AS r(app_id, user_id, endpoint_id, event_id, type, body, n)
            ORDER BY r.n
            """
    }

    public func claimWebhookEvents(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        guard limit > 0 else { return [] }
        var binds = PostgresBindings(capacity: 4)
        binds.append(now)
        binds.append(limit)
        binds.append(owner)
        binds.append(leaseUntil)
        let rows = try await retrying {
            try await withSession { [binds] session in try await session.run(ClaimWebhookEvents.self, binds) }
        }
        return try rows.map { row in
            let row = row.makeRandomAccess()
            let delivery = try Delivery(row: row)
            return ClaimedDelivery(
                delivery: delivery, endpoint: ClaimedDelivery.webhookEndpoint(of: delivery), notification: nil,
                event: WebhookEvent(
                    id: try row.value("event_id"), type: WebhookEventType(rawValue: try row.value("type")),
                    appId: delivery.appId, userId: delivery.userId, timestamp: delivery.createdAt,
                    body: try row.value("body")))
        }
    }

    /// Leases the due webhook events that are the oldest pending of their user and webhook, locked
    /// with `FOR UPDATE SKIP LOCKED` like the outbox's claims (an event another instance holds
    /// also holds back its user's later ones: they are not the oldest).
    enum ClaimWebhookEvents: NamedStatement {
        static let name = "hub_claim_webhook_events_v2"
        static let sql = """
            WITH due AS (
                SELECT d.id FROM hub_delivery d
                WHERE d.state = 'pending' AND d.suspended_at IS NULL AND d.transport = 'webhooks' AND d.due_at <= $1
                    AND (d.lease_owner IS NULL OR d.lease_until < $1)
                    AND \(OutboxMachine.webhookOrder(table: "hub_delivery", row: "d", column: snakeCase))
                ORDER BY d.due_at, d.id
                LIMIT $2
                FOR UPDATE OF d SKIP LOCKED
            ), claimed AS (
                UPDATE hub_delivery d SET lease_owner = $3, lease_until = $4, claimed_at = $1, attempts = d.attempts + 1
                FROM due WHERE d.id = due.id AND d.state = 'pending'
                RETURNING d.*
            )
            SELECT c.*, c.event_type AS type, c.event_body AS body FROM claimed c
            ORDER BY c.due_at, c.id
            """
    }

    /// `appId` → `app_id`: the outbox's logical column names in this store.
    static func snakeCase(_ name: String) -> String {
        name.reduce(into: "") { result, character in
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
    }

    public func webhookSummary(appId: String, since: Date, failures: Int) async throws -> [WebhookSummary] {
        var summaries: [String: WebhookSummary] = [:]
        for row in try await rows(
            """
            SELECT endpoint_id,
                count(*) FILTER (WHERE state = 'finished' AND result = 'delivered' AND finished_at >= \(since))::bigint,
                count(*) FILTER (WHERE state = 'finished' AND result IN ('gaveUp', 'rejected')
                    AND finished_at >= \(since))::bigint,
                count(*) FILTER (WHERE state = 'pending')::bigint
            FROM hub_delivery WHERE transport = 'webhooks' AND app_id = \(appId) GROUP BY endpoint_id
            """)
        {
            let (endpointId, delivered, failed, pending) = try row.decode((String, Int64, Int64, Int64).self)
            let webhook = String(endpointId.dropFirst(Webhook.outboxPrefix.count))
            summaries[webhook] = WebhookSummary(
                webhook: webhook, delivered: Int(delivered), failed: Int(failed), pending: Int(pending),
                lastFailures: [])
        }
        let limit = max(0, failures) * max(1, summaries.count)
        for row in try await rows(
            """
            SELECT endpoint_id, COALESCE(finished_at, claimed_at, created_at), COALESCE(detail, last_error, '')
            FROM hub_delivery
            WHERE transport = 'webhooks' AND app_id = \(appId)
                AND ((state = 'pending' AND last_error IS NOT NULL) OR result IN ('gaveUp', 'rejected'))
            ORDER BY COALESCE(finished_at, claimed_at, created_at) DESC, id DESC LIMIT \(limit)
            """)
        {
            let (endpointId, at, error) = try row.decode((String, Date, String).self)
            let webhook = String(endpointId.dropFirst(Webhook.outboxPrefix.count))
            guard var summary = summaries[webhook], summary.lastFailures.count < failures else { continue }
            summary.lastFailures.append((at, error))
            summaries[webhook] = summary
        }
        return summaries.values.sorted { $0.webhook < $1.webhook }
    }
}
