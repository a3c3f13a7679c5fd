import AsyncHTTPClient
import Foundation
public import HubCore
import HubHTTPSupport
import HubTransportKit
public import Logging
import NIOCore

/// Posts webhook events (``WebhookEvent``) to the app's receivers, signed (``WebhookSignature``).
///
/// A 2xx answer delivers the event. Any other answer, a timeout or a connection failure is
/// retried with the dispatcher's back-off (a `Retry-After` of a 429 or 503 is its floor) until the
/// event is a day old. A webhook no longer configured, or whose URL the allow-list no longer
/// allows, parks its events (suspended) until a hub starts with it again: never dropped.
public final class WebhookTransport: Transport {
    public let id = TransportID.webhooks
    let settings: WebhookSettings
    let policy: WebhookURLPolicy
    let http: OwnedHTTPClient
    let logger: Logger

    /// - Throws: when a PEM in ``WebhookSettings/trustRootsPEM`` is not a certificate.
    public init(settings: WebhookSettings = WebhookSettings(), logger: Logger = Logger(label: "hub.webhook")) throws {
        self.settings = settings
        self.policy = WebhookURLPolicy(allowedHosts: settings.allowedHosts)
        self.http = try OwnedHTTPClient(trustRootsPEM: settings.trustRootsPEM, http1Only: true)
        self.logger = logger
    }

    public var preferredConcurrency: Int? { 16 }

    /// Devices never register with it.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        "webhooks is the app server's event lane, not a device transport; register with apns, fcm, wns, webpush or polling"
    }

    /// The receiver's host and port: the dispatcher caps the sends in flight per host and backs off
    /// one that cannot be reached.
    public func destination(of endpoint: Endpoint) -> String? {
        // The endpoint names the webhook, not the URL; the host share is per webhook then.
        endpoint.id
    }

    public func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(delivery).outcome
    }

    public func transmit(_ delivery: OutboundDelivery) async -> ProviderReply {
        let name = String(delivery.endpoint.id.dropFirst(Webhook.outboxPrefix.count))
        guard let webhook = delivery.app.webhooks.first(where: { $0.id == name }) else {
            return ProviderReply(
                .suspended(
                    reason:
                        "the webhook \(name) is no longer configured for \(delivery.app.id); its events wait for a hub that has it"
                ))
        }
        guard let event = delivery.event else { return ProviderReply(.rejected(reason: "the event's body is missing")) }
        if let problem = policy.problem(with: webhook.url) {
            return ProviderReply(.suspended(reason: "the webhook \(name)'s URL \(problem)"))
        }
        guard let key = WebhookSignature.key(fromSecret: webhook.secret.reveal()) else {
            return ProviderReply(.suspended(reason: "the webhook \(name)'s secret is not a whsec_ secret"))
        }
        let body = Array(event.body.utf8)
        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "NotificationHub-Webhooks")
        for (header, value) in WebhookSignature.headers(id: event.id, body: body, key: key, now: Date()) {
            request.headers.add(name: header, value: value)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.client.execute(request, timeout: TimeAmount(settings.timeout))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            let status = Int(response.status.code)
            if (200..<300).contains(status) { return ProviderReply(.accepted) }
            let retryAfter = response.headers.first(name: "retry-after").flatMap(Int.init).map { Duration.seconds($0) }
            return ProviderReply(.retry(after: retryAfter, reason: "the receiver answered \(status)"))
        } catch {
            if let unreachable = ConnectionFailure.unreachable(error) {
                return ProviderReply(
                    .retry(after: nil, reason: "the receiver could not be reached: \(unreachable)"),
                    unreachable: unreachable)
            }
            if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout {
                return ProviderReply(
                    .retry(after: nil, reason: "the receiver did not answer within \(settings.timeout)"))
            }
            return ProviderReply(.retry(after: nil, reason: "the request failed: \(error)"))
        }
    }

    public func run() async throws {
        await closeAfterGracefulShutdown("webhook", logger: logger, close: shutdown)
    }

    /// Closes the HTTP connections.
    public func shutdown() async throws { try await http.shutdown() }
}
