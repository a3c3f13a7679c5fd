import Foundation
public import HubCore
import HubTransportKit
public import HubWebPush
public import Logging

/// The `unifiedpush` transport: endpoints of any platform (Android without Google's services,
/// Linux desktops, …) whose device gets pushes from a UnifiedPush distributor (such as ntfy).
///
/// The endpoint's token is the distributor's endpoint with the keys the app's connector made, in
/// the shape of a browser's `PushSubscription` JSON (`WebPushSubscription`):
/// `{"endpoint": "https://ntfy.example.com/upAbC…", "keys": {"p256dh": "…", "auth": "…"}}`.
///
/// - Registration: the endpoint must pass the `endpointPolicy` of
///   ``UnifiedPushConfiguration/webPush`` (the Web Push transport's address rules: https, no
///   private, loopback or link-local address, on the allow-list), then the UnifiedPush endpoint check: a GET of the endpoint, following no
///   redirect, must answer `{"unifiedpush":{"version":1}}`. A failing endpoint is refused with
///   what failed. The check runs again on every refresh.
/// - Sending: as Web Push does (RFC 8030 POST, RFC 8291 `aes128gcm` body of at most 4,096 bytes,
///   the same tap and visible payloads), with a VAPID token (RFC 8292) when the app has a VAPID key
///   (`credentials.webpush`), without `Authorization` otherwise.
/// - Answers: 2xx → accepted; 404, 410 → endpoint gone; 429 → retry that endpoint after
///   `Retry-After` (limits are per endpoint, not per host); 5xx and no answer → retry; 401, 403 →
///   suspended (the distributor refuses the VAPID key); other statuses → rejected.
public final class UnifiedPushTransport: Transport {
    public let id = TransportID.unifiedpush
    /// The Web Push transport this one sends through (its client, payloads and encryption).
    let webPush: WebPushTransport
    let logger: Logger

    /// - Parameters:
    ///   - configuration: where distributors may be and how to reach them.
    ///   - logger: where check failures and shutdown problems go.
    /// - Throws: when a PEM in the configuration's `trustRootsPEM` is not a certificate.
    public init(
        configuration: UnifiedPushConfiguration = UnifiedPushConfiguration(),
        logger: Logger = Logger(label: "hub.unifiedpush")
    ) throws {
        self.webPush = WebPushTransport(
            client: try WebPushClient(configuration: configuration.webPush, logger: logger), logger: logger)
        self.logger = logger
    }

    /// The client that talks to distributors.
    public var client: WebPushClient { webPush.client }

    /// UnifiedPush serves every platform.
    public var platforms: Set<Platform> { [] }

    /// Runs until graceful shutdown (after the hub has drained), then closes the connections.
    public func run() async throws {
        await closeAfterGracefulShutdown("UnifiedPush", logger: logger, close: client.shutdown)
    }

    public func send(_ outbound: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(outbound).outcome
    }

    /// Sends one delivery; the reply carries the distributor's `Location` of the message, if any.
    public func transmit(_ outbound: OutboundDelivery) async -> ProviderReply {
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(token: outbound.endpoint.token ?? "")
        } catch {
            return ProviderReply(.rejected(reason: error.description))
        }
        do {
            let response = try await client.send(
                webPush.message(for: outbound), to: subscription, vapid: outbound.app.credentials.webpush?.vapid)
            return ProviderReply(.accepted, messageId: response.location)
        } catch {
            return ProviderReply(Self.outcome(for: error), unreachable: WebPushTransport.unreachable(error))
        }
    }

    /// What the dispatcher should do after `error`.
    static func outcome(for error: WebPushError) -> DeliveryOutcome {
        let reason = error.description.replacingOccurrences(of: "Web Push", with: "UnifiedPush")
        switch error.code {
        case .subscriptionGone: return .endpointGone(since: nil, reason: reason)
        case .tooManyRequests, .serviceFailure, .networkFailure: return .retry(after: error.retryAfter, reason: reason)
        case .unauthorized:
            return .suspended(reason: "the distributor refuses the VAPID token: check credentials.webpush; \(reason)")
        default: return .rejected(reason: reason)
        }
    }

    /// The distributor's host (with its port when the endpoint names one).
    public func destination(of endpoint: Endpoint) -> String? {
        webPush.destination(of: endpoint)
    }

    /// The longest endpoint URL the UnifiedPush server specification allows, in bytes.
    public static let maximumEndpointLength = 1000

    /// Refuses tokens that are not subscriptions, endpoints longer than
    /// ``maximumEndpointLength`` bytes and endpoints the address rules do not allow.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(token: endpoint.token ?? "")
        } catch {
            return error.message.replacingOccurrences(of: "the browser's PushSubscription", with: "the endpoint")
        }
        if subscription.endpoint.utf8.count > Self.maximumEndpointLength {
            return "the endpoint is \(subscription.endpoint.utf8.count) bytes; a UnifiedPush endpoint is at most "
                + "\(Self.maximumEndpointLength)"
        }
        return client.configuration.endpointPolicy.problem(with: subscription.endpoint).map {
            "the endpoint \($0)".replacingOccurrences(of: "transports.webpush", with: "transports.unifiedpush")
        }
    }

    /// The UnifiedPush endpoint check: a GET of the endpoint must answer
    /// `{"unifiedpush":{"version":1}}`; no redirect is followed.
    public func check(registering endpoint: Endpoint, for app: CrossDeviceApp) async -> String? {
        guard let subscription = try? WebPushSubscription(token: endpoint.token ?? "") else { return nil }
        do {
            let (status, body) = try await client.get(subscription.endpoint)
            return UnifiedPushEndpointCheck.problem(status: status, body: body)
        } catch {
            logger.info(
                "a UnifiedPush endpoint check got no answer",
                metadata: ["app": "\(app.id)", "endpoint": "\(endpoint.id)", "reason": "\(error.message)"])
            return "the endpoint check failed: the distributor did not answer the GET (\(error.message)); "
                + "try again when it is reachable"
        }
    }

    /// Closes the HTTP connections; call it when the hub has stopped.
    public func shutdown() async throws {
        try await client.shutdown()
    }
}
