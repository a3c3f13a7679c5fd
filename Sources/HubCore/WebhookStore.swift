public import struct Foundation.Date

/// The webhook lane of the outbox: events for an app's webhooks (``Webhook``) are rows of the same
/// outbox as pushes (transport ``TransportID/webhooks``, kind ``DeliveryKind/webhook``, `endpointId`
/// ``Webhook/outboxEndpointId``, no notification), with their bodies beside them. Leases, renewals,
/// outcomes (``OutboxStore/recordOutcomes(_:)``), released leases and resumptions are the
/// outbox's; only enqueueing and claiming are the lane's own. The claims of
/// ``OutboxStore/claimDeliveries(_:limit:now:owner:leaseUntil:)`` are for device deliveries: the
/// dispatcher never gives them a lane that holds webhook events (``OutboxLane/all`` would).
///
/// The defaults throw `unsupported`, so a store written before webhooks still compiles; a hub with
/// webhooks configured then logs the failure and its webhook lane claims nothing.
public protocol WebhookStore: Sendable {
    /// Enqueues `rows` (each an event for one webhook), due at `now`, in one transaction.
    /// - Parameters:
    ///   - rows: the events, each for one webhook.
    ///   - now: when they are due (and created).
    func enqueueWebhookEvents(_ rows: [WebhookDelivery], at now: Date) async throws

    /// ``OutboxStore/recordOutcomes(_:)`` and ``enqueueWebhookEvents(_:at:)`` of `rows` in one
    /// transaction: the events an outcome makes are durable exactly when the outcome is.
    /// - Parameters:
    ///   - outcomes: the outcomes of claimed deliveries.
    ///   - rows: the webhook events they make.
    ///   - now: when the events are due (and created).
    func recordOutcomes(_ outcomes: [OutboxOutcome], enqueueing rows: [WebhookDelivery], at now: Date) async throws

    /// Leases up to `limit` due webhook events to `owner` until `leaseUntil`, like
    /// ``OutboxStore/claimDeliveries(_:limit:now:owner:leaseUntil:)`` of the webhook lane, each
    /// with its event (``ClaimedDelivery/event``) and the endpoint ``ClaimedDelivery/webhookEndpoint(of:)``
    /// makes. Only the oldest pending event of each app, user and webhook is claimable
    /// (``OutboxMachine/webhookOrder(table:row:column:)``). Order: due time, then ID.
    /// - Parameters:
    ///   - limit: the most events to lease.
    ///   - now: the time of the claim (due times and expired leases are compared with it).
    ///   - owner: the instance that takes the leases.
    ///   - leaseUntil: when the leases end unless renewed.
    func claimWebhookEvents(limit: Int, now: Date, owner: String, leaseUntil: Date) async throws -> [ClaimedDelivery]

    /// Per webhook of `appId`: its events by receipt state since `since`, and its latest failures.
    /// - Parameters:
    ///   - appId: the app.
    ///   - since: where the delivered and failed counts start.
    ///   - failures: how many of the latest failures to list per webhook.
    func webhookSummary(appId: String, since: Date, failures: Int) async throws -> [WebhookSummary]
}

extension WebhookStore {
    public func enqueueWebhookEvents(_ rows: [WebhookDelivery], at now: Date) async throws {
        throw HubError.webhooksUnsupported
    }
    public func recordOutcomes(
        _ outcomes: [OutboxOutcome], enqueueing rows: [WebhookDelivery], at now: Date
    ) async throws {
        throw HubError.webhooksUnsupported
    }
    public func claimWebhookEvents(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        throw HubError.webhooksUnsupported
    }
    public func webhookSummary(appId: String, since: Date, failures: Int) async throws -> [WebhookSummary] {
        throw HubError.webhooksUnsupported
    }
}

extension HubError {
    static var webhooksUnsupported: HubError {
        HubError(.unavailable, "this hub's store keeps no webhook events")
    }
}

/// How one webhook fared (``WebhookStore/webhookSummary(appId:since:failures:)``).
public struct WebhookSummary: Sendable, Hashable {
    /// The webhook's ``Webhook/id``.
    public var webhook: String
    /// Events delivered (the receiver answered 2xx) since the summary's start.
    public var delivered: Int
    /// Events that failed for good (given up, rejected) since the summary's start.
    public var failed: Int
    /// Events queued now (waiting, retrying or being sent).
    public var pending: Int
    /// The latest failed attempts, newest first: when, and what went wrong.
    public var lastFailures: [(at: Date, error: String)]

    /// - Parameters:
    ///   - webhook: the webhook's ID.
    ///   - delivered: events delivered in the period.
    ///   - failed: events failed for good in the period.
    ///   - pending: events queued now.
    ///   - lastFailures: the latest failed attempts, newest first.
    public init(webhook: String, delivered: Int, failed: Int, pending: Int, lastFailures: [(at: Date, error: String)]) {
        self.webhook = webhook
        self.delivered = delivered
        self.failed = failed
        self.pending = pending
        self.lastFailures = lastFailures
    }

    /// Delivered out of finished, or `nil` when none finished.
    public var successRate: Double? {
        delivered + failed == 0 ? nil : Double(delivered) / Double(delivered + failed)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.webhook == rhs.webhook && lhs.delivered == rhs.delivered && lhs.failed == rhs.failed
            && lhs.pending == rhs.pending && lhs.lastFailures.map(\.at) == rhs.lastFailures.map(\.at)
            && lhs.lastFailures.map(\.error) == rhs.lastFailures.map(\.error)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(webhook)
        hasher.combine(delivered)
        hasher.combine(failed)
        hasher.combine(pending)
    }
}

extension ClaimedDelivery {
    /// The endpoint a claimed webhook event goes by: the webhook (``Webhook/outboxEndpointId``)
    /// of the event's app and user, transport ``TransportID/webhooks``; not a device.
    /// - Parameter delivery: the event's outbox row.
    public static func webhookEndpoint(of delivery: Delivery) -> Endpoint {
        Endpoint(
            id: delivery.endpointId, appId: delivery.appId, userId: delivery.userId,
            platform: Platform(rawValue: "webhook"), platformAppId: "", transport: .webhooks,
            registeredAt: delivery.createdAt)
    }
}

extension InterceptedStore {
    public func enqueueWebhookEvents(_ rows: [WebhookDelivery], at now: Date) async throws {
        try await call("enqueueWebhookEvents") { try await $0.enqueueWebhookEvents(rows, at: now) }
    }

    public func recordOutcomes(
        _ outcomes: [OutboxOutcome], enqueueing rows: [WebhookDelivery], at now: Date
    ) async throws {
        try await call("recordOutcomes") { try await $0.recordOutcomes(outcomes, enqueueing: rows, at: now) }
    }

    public func claimWebhookEvents(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        try await call("claimWebhookEvents") {
            try await $0.claimWebhookEvents(limit: limit, now: now, owner: owner, leaseUntil: leaseUntil)
        }
    }

    public func webhookSummary(appId: String, since: Date, failures: Int) async throws -> [WebhookSummary] {
        try await call("webhookSummary") { try await $0.webhookSummary(appId: appId, since: since, failures: failures) }
    }
}
