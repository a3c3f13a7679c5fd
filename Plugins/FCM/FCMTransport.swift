import Foundation
public import HubCore
import HubTransportKit
public import Logging

/// The `fcm` transport: Android endpoints through FCM HTTP v1, with each app's service account.
///
/// What it sends (`OutboundDelivery` → ``FCMMessage``):
/// - shoulder tap: a data message `{"hub": "tap", "app": <app>, "v": "<changeVersion>"}` with
///   `collapse_key` `hub-tap` (only the newest tap matters), `ttl` ``FCMConfiguration/tapTimeToLive``;
/// - visible or fallback: `notification {title, body}` (cut to fit FCM's 4096 bytes with the data,
///   body first, by `VisibleTextFit`) plus data `{"hub": "visible" | "fallback",
///   "app", "v", "id": <notification id>}`, `android.notification.tag` = the publisher's
///   `appNotificationId` (a republish replaces the shown notification), `title_loc_key`,
///   `title_loc_args`, `body_loc_key`, `body_loc_args` and `notification_count` from
///   `visualContent`'s `titleLocKey`, `titleLocArgs`, `bodyLocKey`, `bodyLocArgs` and `badge`,
///   `ttl` until the notification expires. A notification without `visualContent` is sent as a tap;
/// - when the app shows the hub's badge (`delivery.badge: unread`): data `"badge": "<count>"` in
///   every message, and the count as `notification_count` of visible ones (else `visualContent.badge`);
/// - always: `restricted_package_name` = the endpoint's package, `priority` `HIGH` for high-priority
///   notifications and fallbacks, else `NORMAL`.
///
/// How answers map to outcomes: `UNREGISTERED`, `SENDER_ID_MISMATCH`, and `INVALID_ARGUMENT` saying
/// the registration token is not valid → endpoint gone; other `INVALID_ARGUMENT`s, oversize → rejected; `QUOTA_EXCEEDED` → retry after `Retry-After`, at least
/// ``FCMConfiguration/minimumQuotaRetry``; `UNAVAILABLE`, `INTERNAL`, network failures → retry
/// honouring `Retry-After`; 401 → a new access token and one more try within the same send;
/// configuration faults (`THIRD_PARTY_AUTH_ERROR`, 401 again with a new access token, 403 without
/// `SENDER_ID_MISMATCH`, a service account the token endpoint refuses, no FCM credentials) →
/// suspended, logged once per app.
public final class FCMTransport: Transport {
    public let id = TransportID.fcm
    /// The client that talks to FCM; usable on its own, e.g. to ``FCMClient/validate(credentials:)``.
    public let client: FCMClient
    let logger: Logger
    private let problems = ProblemLog()

    /// - Throws: when a PEM in ``FCMConfiguration/trustRootsPEM`` is not a certificate.
    public convenience init(
        configuration: FCMConfiguration = FCMConfiguration(), logger: Logger = Logger(label: "hub.fcm")
    ) throws {
        self.init(client: try FCMClient(configuration: configuration, logger: logger), logger: logger)
    }

    public init(client: FCMClient, logger: Logger = Logger(label: "hub.fcm")) {
        self.client = client
        self.logger = logger
    }

    var configuration: FCMConfiguration { client.configuration }

    public func send(_ outbound: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(outbound).outcome
    }

    /// Sends one delivery; the reply carries the message name FCM assigned
    /// (`projects/{project}/messages/{id}`).
    public func transmit(_ outbound: OutboundDelivery) async -> ProviderReply {
        guard let credentials = outbound.app.credentials.fcm else {
            return ProviderReply(
                .suspended(
                    reason: "the app \(outbound.app.id) has no FCM credentials on this hub: add credentials.fcm"))
        }
        guard let token = outbound.endpoint.token, !token.isEmpty else {
            return ProviderReply(.rejected(reason: "the endpoint has no FCM registration token"))
        }
        do {
            let name = try await client.send(message(for: outbound, token: token), credentials: credentials)
            return ProviderReply(.accepted, messageId: name)
        } catch {
            return ProviderReply(outcome(for: error, app: outbound.app))
        }
    }

    /// Android devices register with FCM.
    public var platforms: Set<Platform> { [.android] }

    /// Runs until graceful shutdown (after the hub has drained), then closes the connections. A
    /// failure to close is logged, not thrown: it must not fail the shutdown of `hub serve`.
    public func run() async throws {
        await closeAfterGracefulShutdown("FCM", logger: logger, close: shutdown)
    }

    /// Refuses endpoints of apps without FCM credentials and tokens that cannot be FCM tokens.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        if app.credentials.fcm == nil {
            return "the app \(app.id) has no FCM credentials on this hub; register with transport polling instead"
        }
        guard let token = endpoint.token else { return "give the FCM registration token" }
        if !token.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) {
            return "is not an FCM registration token: it must be printable ASCII without spaces"
        }
        return nil
    }

    /// Checks that `credentials` can send (see ``FCMClient/validate(credentials:)``).
    public func validate(credentials: FCMCredentials) async throws(FCMError) {
        try await client.validate(credentials: credentials)
    }

    /// Closes the HTTP connections; call it when the hub has stopped.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// The message the transport sends for `outbound` to `token`.
    func message(for outbound: OutboundDelivery, token: String) -> FCMMessage {
        let delivery = outbound.delivery
        let priority: FCMAndroidPriority = outbound.isUrgent ? .high : .normal
        var data = ["hub": "tap", "app": outbound.app.id, "v": String(delivery.changeVersion)]
        // The hub's badge rides in the data, where the app (HubClient) reads it: a data message
        // shows nothing, and Android launchers take the count from the notifications shown.
        if let badge = outbound.badge { data["badge"] = String(badge) }
        var android = FCMAndroidConfig(priority: priority, restrictedPackageName: outbound.endpoint.platformAppId)
        var notification: FCMNotification?
        if let (shown, visual) = outbound.shown {
            data["hub"] = delivery.kind == .fallback ? "fallback" : "visible"
            data["id"] = shown.id
            android.timeToLive = .seconds(shown.secondsToExpiry(now: configuration.now()))
            android.notification = FCMAndroidNotification(
                tag: shown.appNotificationId, titleLocKey: visual.titleLocKey, titleLocArgs: visual.titleLocArgs ?? [],
                bodyLocKey: visual.bodyLocKey, bodyLocArgs: visual.bodyLocArgs ?? [],
                notificationCount: outbound.shownBadge)
            // FCM counts the data and the notification's title and body (UTF-8 bytes) against its
            // limit: the text gets what the data leaves, cut by the hub's one rule.
            let dataSize = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            let text =
                VisibleTextFit.fit(
                    title: visual.title, body: visual.body, budget: FCMMessage.payloadLimit - dataSize)
                ?? VisibleTextFit.Text(title: visual.title, body: visual.body)
            notification = FCMNotification(title: text.title, body: text.body)
        } else {
            android.timeToLive = configuration.tapTimeToLive
            android.collapseKey = "hub-tap"
        }
        return FCMMessage(target: .token(token), data: data, notification: notification, android: android)
    }

    /// Logs a configuration problem of `app` once, not once per delivery.
    func reportOnce(_ error: FCMError, app: CrossDeviceApp, advice: String) {
        let key = "\(app.id)|\(error.code.rawValue)|\(error.httpStatus ?? 0)"
        problems.once(key) {
            logger.error(
                "FCM refuses this app's sends; \(advice)", metadata: ["app": "\(app.id)", "error": "\(error)"])
        }
    }
}
