public import AsyncHTTPClient
public import Foundation
public import HubTransportKit
import NIOCore
import NIOHTTP1

/// A custom transport: each delivery is a signed JSON `POST` to a webhook of your own (a relay to
/// a push service the hub does not speak, a chat bot, a test device…).
///
/// An endpoint of this transport registers with `transport: webhook` and a `token` that names the
/// device at the receiver. The body is the tap — `{"hub": {"app", "user", "endpoint", "token",
/// "kind", "changeVersion"}}`, plus `"notification": {"title", "body"}` for visible deliveries —
/// and ``WebhookSignature`` signs it in the `X-Hub-Signature-256` header.
///
/// The receiver's answer decides the outcome: 2xx `accepted`; 404 or 410 `endpointGone` (the hub
/// deactivates the endpoint); 408, 429 and 5xx `retry`, honouring `Retry-After`; 401 and 403
/// `suspended` (the receiver refuses the signature: the secret is wrong for it, a configuration
/// fault — the hub parks the deliveries until it restarts with the right secret); other 4xx
/// `rejected`. A connection failure, timeout or cancellation is a `retry`.
///
/// The posts of an app with `credentials.webhook` are signed with that app's secret, the others
/// with the one of `transports.webhook`. `hub serve` makes it through ``WebhookPlugin`` from
/// hub.yaml; an embedder can make one directly:
///
/// ```swift
/// let webhook = WebhookTransport(configuration: .init(
///     url: URL(string: "https://relay.contoso.com/hub-taps")!,
///     secret: Secret(ProcessInfo.processInfo.environment["WEBHOOK_SECRET"]!, source: "env:WEBHOOK_SECRET")))
/// let hub = try Hub(configuration: configuration, store: store, transports: [webhook, polling])
/// ```
public struct WebhookTransport: Transport {
    /// Where and how the transport posts.
    public struct Configuration: Sendable {
        /// The webhook every delivery is posted to.
        public var url: URL
        /// The HMAC-SHA256 key of the signature; share it with the receiver only.
        public var secret: Secret
        /// The longest one post may take; the transport returns `retry` when it is exceeded.
        public var timeout: Duration
        /// The current time, for the signature's timestamp and `Retry-After` dates: the hub's
        /// clock (`TransportContext.now`) under `hub serve`, so a test that moves it moves these.
        public var now: @Sendable () -> Date

        /// - Parameters:
        ///   - url: the webhook every delivery is posted to.
        ///   - secret: the HMAC-SHA256 key of the signature.
        ///   - timeout: the longest one post may take.
        ///   - now: the current time; the system's by default.
        public init(
            url: URL, secret: Secret, timeout: Duration = .seconds(10), now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.url = url
            self.secret = secret
            self.timeout = timeout
            self.now = now
        }
    }

    /// The transport's name: endpoints register with `transport: webhook`.
    public static let transportID = TransportID("webhook")

    public let id = WebhookTransport.transportID
    public let configuration: Configuration
    private let httpClient: HTTPClient

    /// - Parameter httpClient: the client posts go through; the process-wide shared one by default.
    public init(configuration: Configuration, httpClient: HTTPClient = .shared) {
        self.configuration = configuration
        self.httpClient = httpClient
    }

    public func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        let body: Data
        do {
            body = try WebhookTap(delivery).encoded()
        } catch {
            return .rejected(reason: "the tap could not be encoded: \(error)")
        }
        let timestamp = Int(configuration.now().timeIntervalSince1970)
        var request = HTTPClientRequest(url: configuration.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "NotificationHub-webhook/1")
        request.headers.add(name: WebhookSignature.timestampHeader, value: String(timestamp))
        request.headers.add(
            name: WebhookSignature.signatureHeader,
            value: WebhookSignature.sign(body: body, timestamp: timestamp, secret: secret(for: delivery.app)))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await httpClient.execute(request, timeout: TimeAmount(configuration.timeout))
            // Drain (and bound) the answer so the connection can be reused.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return Self.outcome(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                now: configuration.now())
        } catch {
            return .retry(after: nil, reason: Task.isCancelled ? "cancelled" : "webhook unreachable: \(error)")
        }
    }

    /// The app's own secret (`credentials.webhook`), else the transport's.
    func secret(for app: CrossDeviceApp) -> Secret {
        app.credentials.webhook?.secret ?? configuration.secret
    }

    /// Refuses tokens the receiver could not route: empty, longer than 256 bytes, or with
    /// characters other than printable ASCII without spaces.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        guard let token = endpoint.token, !token.isEmpty else {
            return "webhook endpoints need a token that names the device at the receiver"
        }
        guard token.utf8.count <= 256 else { return "the token is longer than 256 bytes" }
        guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return "the token must be printable ASCII without spaces"
        }
        return nil
    }

    /// The outcome of a receiver's answer. `Retry-After` may be seconds or an HTTP date (HubCore's
    /// ``RetryAfter`` reads both, as the first-party transports do).
    static func outcome(status: Int, retryAfter: String?, now: Date) -> DeliveryOutcome {
        let delay = RetryAfter.parse(retryAfter, now: now)
        switch status {
        case 200..<300: return .accepted
        case 404, 410: return .endpointGone(since: nil, reason: "the receiver answered \(status)")
        case 408, 429, 500..<600: return .retry(after: delay, reason: "the receiver answered \(status)")
        case 401, 403:
            return .suspended(reason: "the receiver answered \(status): check the webhook secret it and the hub share")
        default: return .rejected(reason: "the receiver answered \(status)")
        }
    }
}

/// The JSON body of a webhook post.
struct WebhookTap: Encodable {
    struct Hint: Encodable {
        var app: String
        var user: String
        var endpoint: String
        var token: String?
        var kind: String
        var changeVersion: Int64
        var notification: VisualContent?
    }

    var hub: Hint

    init(_ delivery: OutboundDelivery) {
        let visible = delivery.kind != .shoulderTap
        hub = Hint(
            app: delivery.app.id, user: delivery.endpoint.userId, endpoint: delivery.endpoint.id,
            token: delivery.endpoint.token, kind: delivery.kind.rawValue,
            changeVersion: delivery.delivery.changeVersion,
            notification: visible ? delivery.notification?.payload.visualContent : nil)
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
