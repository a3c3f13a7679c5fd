public import struct Foundation.Date

/// An endpoint of the app's own server that hears about deliveries and state changes: hub.yaml
/// `apps[].webhooks: [{url, events, secret}]`.
///
/// Events go out from the outbox in a lane of their own (``TransportID/webhooks``), signed in the
/// style of the Standard Webhooks specification with ``secret``, retried with back-off for up
/// to a day, in order per user (``OutboxMachine/webhookOrder(table:row:column:)``). See
/// `docs/webhooks.md`.
public struct Webhook: Sendable, Hashable, Identifiable {
    /// A stable name of the webhook within its app: `wh-` and a hash of its URL (``id(forURL:)``),
    /// so that queued events follow the URL when the list is reordered.
    public var id: String
    /// Where the hub posts events (https, or http to a host listed exactly in the allow-list).
    public var url: String
    /// The event types it receives.
    public var events: Set<WebhookEventType>
    /// The signing secret, `whsec_` and the base64 of 24 to 64 random bytes.
    public var secret: Secret

    /// - Parameters:
    ///   - url: where the hub posts events.
    ///   - events: the event types it receives.
    ///   - secret: the signing secret (`whsec_…`).
    ///   - id: its name in the app; by default ``id(forURL:)``.
    public init(url: String, events: Set<WebhookEventType>, secret: Secret, id: String? = nil) {
        self.id = id ?? Self.id(forURL: url)
        self.url = url
        self.events = events
        self.secret = secret
    }

    /// `wh-` and the 64-bit FNV-1a hash of `url` in hex: stable across restarts and list edits.
    public static func id(forURL url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "wh-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The outbox's `endpointId` of this webhook's events: `webhook:` and ``id``.
    public var outboxEndpointId: String { Self.outboxPrefix + id }

    /// What every outbox `endpointId` of a webhook event starts with.
    public static let outboxPrefix = "webhook:"
}

/// What happened, as a webhook event's `type`.
public struct WebhookEventType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A provider took a delivery for a device.
    public static let deliveryDelivered = WebhookEventType(rawValue: "delivery.delivered")
    /// A delivery failed for good (the endpoint is gone, the provider rejected it, the hub gave up)
    /// or was parked for a configuration fault (suspended); `reason` says why.
    public static let deliveryFailed = WebhookEventType(rawValue: "delivery.failed")
    /// A provider said an endpoint's token is dead: the endpoint is now inactive.
    public static let endpointInactive = WebhookEventType(rawValue: "endpoint.inactive")
    /// A device marked a notification read.
    public static let notificationRead = WebhookEventType(rawValue: "notification.read")
    /// A device dismissed a notification.
    public static let notificationDismissed = WebhookEventType(rawValue: "notification.dismissed")
    /// A broadcast reached every user of its audience.
    public static let broadcastDone = WebhookEventType(rawValue: "broadcast.done")
    /// Every type, in documentation order.
    public static let known: [WebhookEventType] = [
        .deliveryDelivered, .deliveryFailed, .endpointInactive, .notificationRead, .notificationDismissed,
        .broadcastDone,
    ]
    public var description: String { rawValue }
}

extension TransportID {
    /// The outbox lane of webhook events.
    public static let webhooks = TransportID("webhooks")
}

extension DeliveryKind {
    /// An event to one of the app's webhooks (``Webhook``).
    public static let webhook = DeliveryKind(rawValue: "webhook")
}

/// Which webhook URLs the hub posts to: the address rules of Web Push endpoints
/// (``HostAllowList``), with `transports.webhooks.allowedHosts` as the list.
///
/// A URL is accepted when it is `https` on any public host (the default list is `*`), or names a
/// host (and port) the list gives exactly, which also allows a private or loopback host and plain
/// `http` (a receiver on the same machine, tests, `hub emulate webhook`). The refusal names the
/// host, never the URL (its path may carry a token).
package struct WebhookURLPolicy: Sendable, Hashable {
    /// The hosts allowed; `*` allows any public https host.
    package var allowedHosts: [String]

    package init(allowedHosts: [String] = ["*"]) { self.allowedHosts = allowedHosts }

    /// Why the hub must not post to `url`, or `nil` when it may.
    package func problem(with url: String) -> String? {
        let checked: ProviderURL
        do {
            checked = try ProviderURL(
                checking: url, notAURL: "is not a URL; give the receiver's full https:// URL", allowingHTTP: true)
        } catch {
            return error.message
        }
        let host = checked.host
        let defaultPort = checked.scheme == "http" ? 80 : 443
        let port = checked.port ?? defaultPort
        if allowedHosts.contains(where: {
            HostAllowList.isExact(entry: $0, host: host, port: port, defaultPort: defaultPort)
        }) {
            return nil
        }
        guard checked.scheme == "https" else {
            return
                "is plain http to '\(host)', which transports.webhooks.allowedHosts does not list exactly; use https"
        }
        if let problem = HostAllowList.privateProblem(host: host) {
            return "\(problem); list it exactly in transports.webhooks.allowedHosts to allow it"
        }
        guard port == 443 else {
            return "must use the default https port; port \(port) is allowed only when listed as '\(host):\(port)'"
        }
        if !allowedHosts.contains(where: { HostAllowList.isWildcard(entry: $0, host: host) }) {
            return "names '\(host)', which is not on this hub's allow-list (transports.webhooks.allowedHosts)"
        }
        return nil
    }
}
