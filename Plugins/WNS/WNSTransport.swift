import Foundation
public import HubCore
import HubHTTPSupport
import HubTransportKit
public import Logging

/// The `wns` transport: Windows endpoints through WNS, with each app's package SID or Entra ID app.
///
/// The endpoint's token is its channel URI. It is checked at registration and again before every
/// send against ``WNSConfiguration/channelPolicy``: `https`, a host on `*.notify.windows.com`, the
/// default port, no user information — or a host the operator allowed.
///
/// What it sends:
/// - shoulder tap: `wns/raw`, `application/octet-stream`, body `{"hub":"tap","app":…,"v":"<version>"}`,
///   `X-WNS-Cache-Policy` ``WNSConfiguration/tapCachePolicy`` (`cache`: WNS keeps the newest tap for
///   an offline device), `X-WNS-TTL` ``WNSConfiguration/tapTimeToLive``;
/// - when the app shows the hub's badge (`delivery.badge: unread`): a `wns/badge` with the count
///   before every tap, and as the badge of visible deliveries (in place of `visualContent.badge`);
/// - visible or fallback: when `visualContent.badge` is given, first a `wns/badge` (`<badge
///   value="N"/>`, 0 clears it, more than 99 shows 99); when `visualContent.tile` is `true`, a
///   `wns/tile` (`TileMedium`, the title and body as wrapped lines, `X-WNS-Tag` as the toast's);
///   then a `ToastGeneric` toast with the escaped title and body — the fallback text: WNS has no
///   localisation keys, so `titleLocKey`/`bodyLocKey` are not sent —, `launch`
///   `hub=visible&app=…&id=…&v=…`, `X-WNS-Tag` from `appNotificationId` and `X-WNS-Group` from
///   `groupName` (see ``WNSTag/init(deriving:)`` for how long or non-alphanumeric values become
///   16 characters), `X-WNS-TTL` until the notification expires. A notification without
///   `visualContent` is sent as a tap. Toast and tile text is cut to fit 5000 bytes, body first,
///   by `VisibleTextFit`. Badge and tile go first: a retry after a failure resends them harmlessly
///   (they replace what is shown), and the toast is sent only once they were accepted;
/// - `X-WNS-PRIORITY: 1` for high-priority notifications and fallbacks.
///
/// How answers map to outcomes: 200 → accepted (`channelthrottled` → retry); 404, 410 → endpoint
/// gone; 406 → retry after `Retry-After`; 401 → a new access token and one resend; 400, 405,
/// 413 → rejected; 5xx → retry; configuration faults (401 again with a new access token, 403 —
/// the credentials are not those of the app that owns the channel —, credentials the token
/// endpoint refuses, no WNS credentials) → suspended, logged once per app. The reason keeps `X-WNS-Status`, `X-WNS-Error-Description` and
/// `X-WNS-Msg-ID`, so they are stored with the delivery.
public final class WNSTransport: Transport {
    public let id = TransportID.wns
    /// The client that talks to WNS; usable on its own for tiles and badges.
    public let client: WNSClient
    let logger: Logger
    /// The (app, code) configuration faults already logged.
    let problems = ProblemLog()

    /// - Throws: when a PEM in ``WNSConfiguration/trustRootsPEM`` is not a certificate.
    public convenience init(
        configuration: WNSConfiguration = WNSConfiguration(), logger: Logger = Logger(label: "hub.wns")
    ) throws {
        self.init(client: try WNSClient(configuration: configuration, logger: logger), logger: logger)
    }

    public init(client: WNSClient, logger: Logger = Logger(label: "hub.wns")) {
        self.client = client
        self.logger = logger
    }

    var configuration: WNSConfiguration { client.configuration }

    public func send(_ outbound: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(outbound).outcome
    }

    /// Sends one delivery; the reply carries WNS's `X-WNS-Msg-ID` of the last notification sent
    /// (the toast, when there is one).
    public func transmit(_ outbound: OutboundDelivery) async -> ProviderReply {
        guard let credentials = outbound.app.credentials.wns else {
            return ProviderReply(
                .suspended(
                    reason: "the app \(outbound.app.id) has no WNS credentials on this hub: add credentials.wns"))
        }
        guard let channelURI = outbound.endpoint.token, !channelURI.isEmpty else {
            return ProviderReply(.rejected(reason: "the endpoint has no WNS channel URI"))
        }
        // Badge and tile first: they replace what the device shows, so a retry after a later
        // failure sends them again harmlessly; the toast, which would show twice, goes last.
        var messageID: String?
        for (notification, options) in notifications(for: outbound) {
            do {
                let response = try await client.send(
                    notification, to: channelURI, credentials: credentials, options: options)
                messageID = response.messageID ?? messageID
                if response.notificationStatus?.lowercased() == "channelthrottled" {
                    return ProviderReply(
                        .retry(after: response.retryAfter, reason: "\(response) — WNS throttles this channel"),
                        messageId: messageID)
                }
            } catch {
                return ProviderReply(
                    outcome(for: error, endpoint: outbound.endpoint), messageId: messageID,
                    unreachable: error.code == .networkFailure
                        ? error.underlying.flatMap { ConnectionFailure.unreachable($0) } : nil)
            }
        }
        return ProviderReply(.accepted, messageId: messageID)
    }

    /// Windows devices register with WNS.
    public var platforms: Set<Platform> { [.windows] }

    /// A WNS endpoint's address is its channel URI.
    public var tokenField: String { "channelUri" }

    /// Runs until graceful shutdown (after the hub has drained), then closes the connections. A
    /// failure to close is logged, not thrown: it must not fail the shutdown of `hub serve`.
    public func run() async throws {
        await closeAfterGracefulShutdown("WNS", logger: logger, close: shutdown)
    }

    /// The channel URI's host (with its port when it names one): the dispatcher caps the sends in
    /// flight per host and backs off a host that cannot be reached.
    public func destination(of endpoint: Endpoint) -> String? {
        guard let channelURI = endpoint.token, let url = try? ProviderURL(checking: channelURI, notAURL: "") else {
            return nil
        }
        return url.port.map { "\(url.host):\($0)" } ?? url.host
    }

    /// Refuses endpoints of apps without WNS credentials and channel URIs the policy does not allow.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        if app.credentials.wns == nil {
            return "the app \(app.id) has no WNS credentials on this hub; register with transport polling instead"
        }
        guard let channelURI = endpoint.token else { return "give the channel URI WNS issued to the app" }
        return configuration.channelPolicy.problem(with: channelURI)
    }

    /// Closes the HTTP connections; call it when the hub has stopped.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// The notifications and options the transport sends for `outbound`, in order: for a visible
    /// delivery the badge (the hub's, else `visualContent.badge`), the tile (if `visualContent.tile`), then the toast.
    func notifications(for outbound: OutboundDelivery) -> [(WNSNotification, WNSSendOptions)] {
        let delivery = outbound.delivery
        var options = WNSSendOptions()
        if outbound.isUrgent { options.priority = .high }
        if let (shown, visual) = outbound.shown {
            let kind = delivery.kind == .fallback ? "fallback" : "visible"
            let launch = FormEncoding.encode([
                ("hub", kind), ("app", outbound.app.id), ("id", shown.id), ("v", String(delivery.changeVersion)),
            ])
            let tag = WNSTag(deriving: shown.appNotificationId)
            var toast = WNSToast(
                title: visual.title, body: visual.body, launch: launch, tag: tag,
                group: shown.groupName.map { WNSTag(deriving: $0) })
            let text = Self.fitted(visual) { title, body in
                toast.title = title
                toast.body = body
                return toast.xml.utf8.count
            }
            toast.title = text.title
            toast.body = text.body
            options.timeToLive = .seconds(shown.secondsToExpiry(now: configuration.now()))
            var sends: [(WNSNotification, WNSSendOptions)] = []
            var quiet = options
            quiet.priority = nil
            if let badge = outbound.shownBadge { sends.append((.badge(WNSBadge(.number(badge))), quiet)) }
            if visual.tile == true {
                var tile = WNSTile(lines: [], tag: tag)
                let text = Self.fitted(visual) { title, body in
                    tile.lines = [title] + (body.map { [$0] } ?? [])
                    return tile.xml.utf8.count
                }
                tile.lines = [text.title] + (text.body.map { [$0] } ?? [])
                sends.append((.tile(tile), quiet))
            }
            sends.append((.toast(toast), options))
            return sends
        }
        var tap = JSONWriter(capacity: 64)
        tap.object { json in
            json.member("hub", "tap")
            json.member("app", outbound.app.id)
            json.member("v", String(delivery.changeVersion))
        }
        options.timeToLive = configuration.tapTimeToLive
        let raw = (WNSNotification.raw(WNSRaw(bytes: tap.bytes, cachePolicy: configuration.tapCachePolicy)), options)
        guard let badge = outbound.badge else { return [raw] }
        // The hub's badge first (it replaces what the tile shows, so a retry resends it harmlessly),
        // as WNS keeps it for an offline device; then the tap.
        var quiet = options
        quiet.priority = nil
        quiet.timeToLive = nil
        return [(.badge(WNSBadge(.number(badge))), quiet), raw]
    }

    /// `visual`'s title and body cut by the hub's one rule (`VisibleTextFit`) to fit
    /// ``WNSNotification/payloadLimit`` in the XML `size` writes for a title and a body. Unchanged
    /// when nothing fits (the client then refuses the body as too large).
    static func fitted(
        _ visual: VisualContent, size: (String, String?) -> Int
    ) -> VisibleTextFit.Text {
        let base = size("", visual.body == nil ? nil : "")
        return VisibleTextFit.fit(
            title: visual.title, body: visual.body, budget: WNSNotification.payloadLimit - base,
            cost: VisibleTextFit.xmlCost) ?? VisibleTextFit.Text(title: visual.title, body: visual.body)
    }
}

extension WNSTransport {
    /// What the dispatcher should do after `error` (PROVIDERS.md §3.5 and §6). The reason keeps WNS's
    /// status and `X-WNS-*` headers.
    func outcome(for error: WNSError, endpoint: Endpoint) -> DeliveryOutcome {
        let reason = error.description
        switch error.code {
        case .channelNotFound, .channelExpired:
            return .endpointGone(since: nil, reason: reason)
        case .throttled, .internalServerError, .serviceUnavailable, .networkFailure, .authenticationUnavailable:
            return .retry(after: error.retryAfter, reason: reason)
        case .unauthorized, .forbidden, .authenticationFailed:
            // 401 twice within one send (the second time with a new token), 403 (authenticated,
            // but not for this channel's app) or no token at all: the credentials are wrong.
            reportOnce(
                endpoint.appId, error.code,
                "WNS refuses this app's credentials (\(reason)): check credentials.wns (package SID and secret, "
                    + "or tenant, client ID and secret) are those of the app that owns the channels; deliveries "
                    + "are suspended until the hub restarts with this fixed")
            return .suspended(reason: reason)
        case .badRequest, .methodNotAllowed, .payloadTooLarge:
            logger.warning(
                "WNS refused a notification; fix before it is sent again",
                metadata: ["endpoint": "\(endpoint.id)", "app": "\(endpoint.appId)", "reason": "\(reason)"])
            return .rejected(reason: reason)
        case .channelNotAllowed, .bodyTooLarge:
            return .rejected(reason: reason)
        default:
            if let status = error.response?.status, (500...599).contains(status) {
                return .retry(after: error.retryAfter, reason: reason)
            }
            return .rejected(reason: reason)
        }
    }

    /// Logs a configuration fault once per app and code, at error level.
    private func reportOnce(_ appId: String, _ code: WNSErrorCode, _ message: String) {
        problems.once("\(appId)|\(code.rawValue)") { logger.error("\(message)", metadata: ["app": "\(appId)"]) }
    }
}
