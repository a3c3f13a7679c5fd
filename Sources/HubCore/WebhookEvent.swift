public import struct Foundation.Date

/// One event for an app's webhooks, as the hub enqueues it: its ID, type, the user it concerns and
/// its JSON body, written once when it happens (every attempt sends the same bytes).
///
/// The body is `{"id", "type", "timestamp", "data": {…}}`, `data` holding the app and user and the
/// same fields as the receipts API (`GET …/notifications/{id}/deliveries`) for delivery events.
public struct WebhookEvent: Sendable, Hashable {
    /// `evt_` and a random ID; the `webhook-id` header of every attempt (receivers deduplicate by it).
    public var id: String
    public var type: WebhookEventType
    public var appId: String
    /// The user it concerns; events of one user reach a webhook in the order they happened.
    public var userId: String
    /// When it happened.
    public var timestamp: Date
    /// The JSON body sent.
    public var body: String

    /// - Parameters:
    ///   - id: the event's ID.
    ///   - type: what happened.
    ///   - appId: the app.
    ///   - userId: the user it concerns.
    ///   - timestamp: when it happened.
    ///   - body: the JSON body sent.
    public init(id: String, type: WebhookEventType, appId: String, userId: String, timestamp: Date, body: String) {
        self.id = id
        self.type = type
        self.appId = appId
        self.userId = userId
        self.timestamp = timestamp
        self.body = body
    }

    /// An event with a new ID whose body holds `data`'s members (written after `appId` and `userId`).
    package static func make(
        _ type: WebhookEventType, appId: String, userId: String, at timestamp: Date,
        data: (inout JSONWriter) -> Void
    ) -> WebhookEvent {
        let id = "evt_" + RandomID.make()
        var json = JSONWriter(capacity: 512)
        json.object { json in
            json.member("id", id)
            json.member("type", type.rawValue)
            json.member("timestamp", timestamp)
            json.key("data")
            json.object { json in
                json.member("appId", appId)
                json.member("userId", userId)
                data(&json)
            }
        }
        return WebhookEvent(
            id: id, type: type, appId: appId, userId: userId, timestamp: timestamp,
            body: String(decoding: json.bytes, as: UTF8.self))
    }

    /// The events a send's recorded outcome makes: `delivery.delivered`, `delivery.failed` (gone,
    /// rejected, given up, suspended, with the reason) and, for a gone endpoint,
    /// `endpoint.inactive`. None for retries, releases, superseded deliveries and webhook events.
    package static func events(
        for claimed: ClaimedDelivery, _ change: OutboxOutcome.Change, providerMessageId: String?, at now: Date
    ) -> [WebhookEvent] {
        let delivery = claimed.delivery
        guard delivery.kind != .webhook else { return [] }
        let state: ReceiptState
        let reason: String?
        switch change {
        case .finish(.delivered, _, _): (state, reason) = (.delivered, nil)
        case .finish(.endpointGone, let detail, _): (state, reason) = (.gone, detail)
        case .finish(.rejected, let detail, _): (state, reason) = (.rejected, detail)
        case .finish(.gaveUp, let detail, _): (state, reason) = (.gaveUp, detail)
        case .suspend(let detail): (state, reason) = (.suspended, detail)
        default: return []
        }
        let endpoint = claimed.endpoint
        func receipt(_ json: inout JSONWriter) {
            json.member("notificationId", delivery.notificationId ?? claimed.notification?.id)
            json.member("appNotificationId", claimed.notification?.appNotificationId)
            json.member("endpointId", endpoint.id)
            json.member("platform", endpoint.platform.rawValue)
            json.member("transport", endpoint.transport.rawValue)
            json.member("appDisplayName", endpoint.appDisplayName)
            json.member("kind", delivery.kind == .shoulderTap ? "tap" : delivery.kind.rawValue)
            json.member("deliveryId", delivery.id)
            json.member("attempts", delivery.attempts)
            json.member("state", state.rawValue)
            json.member("reason", reason)
            json.member("providerMessageId", providerMessageId)
            json.member("enqueuedDateTime", delivery.createdAt)
            json.member("finishedDateTime", now)
        }
        var events = [
            make(
                state == .delivered ? .deliveryDelivered : .deliveryFailed, appId: delivery.appId,
                userId: delivery.userId, at: now, data: receipt)
        ]
        if state == .gone {
            events.append(
                make(.endpointInactive, appId: delivery.appId, userId: delivery.userId, at: now) { json in
                    json.member("endpointId", endpoint.id)
                    json.member("platform", endpoint.platform.rawValue)
                    json.member("transport", endpoint.transport.rawValue)
                    json.member("appDisplayName", endpoint.appDisplayName)
                    json.member("endpointState", EndpointState.inactive.rawValue)
                    json.member("inactiveReason", reason)
                    json.member("inactiveDateTime", now)
                })
        }
        return events
    }

    /// The `notification.read` and `notification.dismissed` events of a device's state change
    /// (`before` → `after`); none when neither changed.
    package static func events(
        stateChange after: UserNotification, before: (readState: ReadState, userActionState: UserActionState)?,
        key: FeedKey, endpoint: String?, at now: Date
    ) -> [WebhookEvent] {
        var types: [WebhookEventType] = []
        if after.readState == .read, before?.readState != .read { types.append(.notificationRead) }
        if after.userActionState == .dismissed, before?.userActionState != .dismissed {
            types.append(.notificationDismissed)
        }
        return types.map { type in
            make(type, appId: key.appId, userId: key.userId, at: now) { json in
                json.member("notificationId", after.id)
                json.member("appNotificationId", after.appNotificationId)
                json.member("endpointId", endpoint)
                json.member("readState", after.readState.rawValue)
                json.member("userActionState", after.userActionState.rawValue)
                json.member("changeVersion", after.changeVersion)
                json.member(type == .notificationRead ? "readDateTime" : "dismissedDateTime", now)
            }
        }
    }

    /// The outbox rows of `events` for `app`'s webhooks that subscribe to each: one per webhook.
    package static func rows(_ events: [WebhookEvent], for app: CrossDeviceApp) -> [WebhookDelivery] {
        events.flatMap { event in
            app.webhooks.filter { $0.events.contains(event.type) }.map { WebhookDelivery(event: event, webhook: $0.id) }
        }
    }
}

/// One event queued for one webhook: a row of the outbox's webhook lane.
public struct WebhookDelivery: Sendable, Hashable {
    public var event: WebhookEvent
    /// The webhook's ``Webhook/id``.
    public var webhook: String

    /// - Parameters:
    ///   - event: the event.
    ///   - webhook: the webhook's ``Webhook/id``.
    public init(event: WebhookEvent, webhook: String) {
        self.event = event
        self.webhook = webhook
    }

    /// The outbox's `endpointId` of the row.
    public var outboxEndpointId: String { Webhook.outboxPrefix + webhook }
}
