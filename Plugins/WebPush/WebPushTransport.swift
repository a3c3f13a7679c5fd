import Foundation
public import HubCore
import HubHTTP2
import HubTransportKit
public import Logging

/// The `webpush` transport: endpoints of the web platform through the browsers' push services
/// (RFC 8030), encrypted per RFC 8291 (`aes128gcm`) and signed with the app's VAPID key (RFC 8292).
///
/// The endpoint's token is the browser's `PushSubscription` JSON (see ``WebPushSubscription``). It
/// is checked at registration and again before every send against
/// ``WebPushConfiguration/endpointPolicy``.
///
/// What it sends, as JSON encrypted into one record:
/// - shoulder tap: `{"hub":"tap","app":…,"v":"<version>"}`, `TTL` ``WebPushConfiguration/tapTimeToLive``,
///   `Topic: hubtap` (an undelivered tap is replaced by the newer one: only the newest matters);
/// - visible or fallback: `{"hub":"visible"|"fallback","app":…,"id":…,"v":…,"tag":…,"title":…,"body":…}`
///   for the service worker's `showNotification`, `TTL` until the notification expires, `Topic` from
///   `appNotificationId` (see ``WebPushTopic/init(deriving:)``). A notification without
///   `visualContent` is sent as a tap. To a subscription that registered `declarative: true`, or
///   whose push service is one of ``WebPushConfiguration/declarativeHosts`` (Apple's) unless it
///   registered `declarative: false`, the visible message is a ``DeclarativePushMessage`` instead,
///   which the browser shows without a service worker (its `app_badge` is the hub's count);
/// - when the app shows the hub's badge (`delivery.badge: unread`): `"badge":"<count>"` in both
///   classic payloads, for the service worker's `navigator.setAppBadge` (0: `clearAppBadge`);
/// - `Urgency`: `high` for high-priority notifications and fallbacks, `low` for low, else `normal`.
///
/// How answers map to outcomes: 2xx (201) → accepted; 404, 410 → endpoint gone; 429 and 5xx →
/// retry (after `Retry-After` when given); 401, 403 (the push service refuses the VAPID token or
/// key) and an app without a usable VAPID key → suspended, logged once per app; 400, 413, a
/// subscription or URL the policy refuses → rejected; no answer → retry.
public final class WebPushTransport: Transport {
    public let id = TransportID.webpush
    /// The client that talks to push services; usable on its own.
    public let client: WebPushClient
    let logger: Logger
    /// The (app, code) configuration faults already logged.
    let problems = ProblemLog()

    /// - Throws: when a PEM in ``WebPushConfiguration/trustRootsPEM`` is not a certificate.
    public convenience init(
        configuration: WebPushConfiguration = WebPushConfiguration(), logger: Logger = Logger(label: "hub.webpush")
    ) throws {
        self.init(client: try WebPushClient(configuration: configuration, logger: logger), logger: logger)
    }

    public init(client: WebPushClient, logger: Logger = Logger(label: "hub.webpush")) {
        self.client = client
        self.logger = logger
    }

    var configuration: WebPushConfiguration { client.configuration }

    /// Web Push serves the web platform.
    public var platforms: Set<Platform> { [.web] }

    /// Runs until graceful shutdown (after the hub has drained), then closes the connections. A
    /// failure to close is logged, not thrown: it must not fail the shutdown of `hub serve`.
    public func run() async throws {
        await closeAfterGracefulShutdown("Web Push", logger: logger, close: shutdown)
    }

    public func send(_ outbound: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(outbound).outcome
    }

    /// Sends one delivery; the reply carries the push service's `Location` of the message.
    public func transmit(_ outbound: OutboundDelivery) async -> ProviderReply {
        guard let vapid = outbound.app.credentials.webpush?.vapid else {
            return ProviderReply(
                suspended(
                    outbound.endpoint, .vapidUnavailable,
                    "the app \(outbound.app.id) has no VAPID key on this hub: add credentials.webpush"))
        }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(token: outbound.endpoint.token ?? "")
        } catch {
            return ProviderReply(.rejected(reason: error.description))
        }
        do {
            let response = try await client.send(message(for: outbound), to: subscription, vapid: vapid)
            return ProviderReply(.accepted, messageId: response.location)
        } catch {
            return ProviderReply(
                outcome(for: error, endpoint: outbound.endpoint),
                unreachable: Self.unreachable(error))
        }
    }

    /// Why the push service was never reached, when no connection could be opened to it (DNS,
    /// TCP, TLS): the dispatcher then backs off its host.
    /// - Parameter error: what a send threw.
    public static func unreachable(_ error: WebPushError) -> String? {
        guard error.code == .networkFailure, let failure = error.underlying as? HTTP2ClientError,
            failure.code == .connectionFailed
        else { return nil }
        return failure.description
    }

    /// The push service's host (with its port when the endpoint names one): the dispatcher caps
    /// the sends in flight per host and backs off a host that cannot be reached.
    public func destination(of endpoint: Endpoint) -> String? {
        guard let subscription = try? WebPushSubscription(token: endpoint.token ?? ""),
            let url = try? ProviderURL(checking: subscription.endpoint, notAURL: "")
        else { return nil }
        return url.port.map { "\(url.host):\($0)" } ?? url.host
    }

    /// `declarative`: `true` when the subscription shows visible notifications from declarative
    /// push messages, `false` to keep classic ones even for Apple's push service.
    public var endpointAttributes: Set<String> { [Self.declarativeAttribute] }

    /// Refuses endpoints of apps without a VAPID key, tokens that are not subscriptions,
    /// push-service URLs the policy does not allow and a `declarative` that is not a boolean.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        if app.credentials.webpush == nil {
            return "the app \(app.id) has no VAPID key on this hub; register with transport polling instead"
        }
        if let declarative = endpoint.attributes[Self.declarativeAttribute], declarative != "true",
            declarative != "false"
        {
            return "declarative must be true or false, not '\(declarative)'"
        }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(token: endpoint.token ?? "")
        } catch {
            return error.message
        }
        return configuration.endpointPolicy.problem(with: subscription.endpoint).map {
            "the subscription's endpoint \($0)"
        }
    }

    /// Closes the HTTP connections; call it when the hub has stopped.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// The message the transport sends for `outbound` (the UnifiedPush transport sends the same).
    /// - Parameter outbound: the delivery, its endpoint, app and notification.
    public func message(for outbound: OutboundDelivery) -> WebPushMessage {
        let delivery = outbound.delivery
        var urgency = WebPushUrgency.normal
        if outbound.isUrgent { urgency = .high }
        if delivery.priority == .low && delivery.kind != .fallback { urgency = .low }
        if let (shown, visual) = outbound.shown {
            var fields: [String: String] = [
                "hub": delivery.kind == .fallback ? "fallback" : "visible", "app": outbound.app.id, "id": shown.id,
                "v": String(delivery.changeVersion), "tag": shown.appNotificationId,
            ]
            let payload: [UInt8]
            if isDeclarative(outbound.endpoint),
                let navigate = DeclarativePushMessage.navigateURL(origin: outbound.endpoint.platformAppId)
            {
                fields["tag"] = nil
                payload =
                    DeclarativePushMessage(
                        title: visual.title, body: visual.body, navigate: navigate, tag: shown.appNotificationId,
                        data: fields, appBadge: Self.badge(of: outbound)
                    ).payload
            } else {
                fields["badge"] = outbound.badge.map(String.init)
                payload = Self.fitting(title: visual.title, body: visual.body) { title, body in
                    var classic = fields
                    classic["title"] = title
                    classic["body"] = body
                    return Self.json(classic)
                }
            }
            return WebPushMessage(
                payload: payload, timeToLive: shown.secondsToExpiry(now: configuration.now()),
                urgency: urgency,
                topic: WebPushTopic(deriving: shown.appNotificationId))
        }
        var fields = ["hub": "tap", "app": outbound.app.id, "v": String(delivery.changeVersion)]
        fields["badge"] = outbound.badge.map(String.init)
        return WebPushMessage(
            payload: Self.json(fields), timeToLive: Int(configuration.tapTimeToLive.components.seconds),
            urgency: urgency, topic: WebPushTopic("hubtap"))
    }

    /// Whether visible notifications go to `endpoint` as declarative push messages: as it said at
    /// registration (`declarative: true` or `false`), else when its push service is one of
    /// ``WebPushConfiguration/declarativeHosts`` (Apple's, by default).
    func isDeclarative(_ endpoint: Endpoint) -> Bool {
        if let said = endpoint.attributes[Self.declarativeAttribute] { return said == "true" }
        guard let subscription = try? WebPushSubscription(token: endpoint.token ?? ""),
            let url = try? ProviderURL(checking: subscription.endpoint, notAURL: "")
        else { return false }
        return WebPushEndpointPolicy(allowedHosts: configuration.declarativeHosts)
            .names(host: url.host, port: url.port ?? 443)
    }

    /// The endpoint attribute a subscription sets at registration (`declarative: true`).
    static let declarativeAttribute = "declarative"

    /// The app badge a declarative message sets: the hub's unread count when the app shows it
    /// (`delivery.badge: unread`), else the count the publisher gave in `visualContent`.
    static func badge(of outbound: OutboundDelivery) -> Int? {
        outbound.badge ?? outbound.shown?.visual.badge
    }

    /// The payload `render` makes of the title and body, with the body (then the title) cut by
    /// the hub's one rule (`VisibleTextFit`) when the whole would not fit the one record a Web Push
    /// message has.
    static func fitting(title: String, body: String?, render: (String, String?) -> [UInt8]) -> [UInt8] {
        let payload = render(title, body)
        guard payload.count > WebPushEncryption.maximumPlaintextSize else { return payload }
        let budget = WebPushEncryption.maximumPlaintextSize - render("", body == nil ? nil : "").count
        guard
            let text = VisibleTextFit.fit(
                title: title, body: body, budget: budget, cost: VisibleTextFit.jsonCost)
        else { return payload }
        return render(text.title, text.body)
    }

    /// A flat JSON object of strings, keys sorted.
    static func json(_ fields: [String: String]) -> [UInt8] {
        let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])
        return Array(data ?? Data("{}".utf8))
    }
}

extension WebPushTransport {
    /// What the dispatcher should do after `error` (PROVIDERS.md §4 and §6).
    func outcome(for error: WebPushError, endpoint: Endpoint) -> DeliveryOutcome {
        let reason = error.description
        switch error.code {
        case .subscriptionGone:
            return .endpointGone(since: nil, reason: reason)
        case .tooManyRequests, .serviceFailure, .networkFailure:
            return .retry(after: error.retryAfter, reason: reason)
        case .unauthorized, .vapidUnavailable:
            return suspended(
                endpoint, error.code,
                "webpush deliveries of this app are suspended until the hub restarts with credentials.webpush fixed: "
                    + reason,
                reason: reason)
        default:
            if let status = error.status, (500...599).contains(status) {
                return .retry(after: error.retryAfter, reason: reason)
            }
            if error.status != nil {
                logger.warning(
                    "a push service refused a message; fix before it is sent again",
                    metadata: ["endpoint": "\(endpoint.id)", "app": "\(endpoint.appId)", "reason": "\(reason)"])
            }
            return .rejected(reason: reason)
        }
    }

    /// A suspended outcome, logged once per app and code at error level.
    private func suspended(
        _ endpoint: Endpoint, _ code: WebPushErrorCode, _ message: String, reason: String? = nil
    ) -> DeliveryOutcome {
        problems.once("\(endpoint.appId)|\(code.rawValue)") {
            logger.error("\(message)", metadata: ["app": "\(endpoint.appId)"])
        }
        return .suspended(reason: reason ?? message)
    }
}
