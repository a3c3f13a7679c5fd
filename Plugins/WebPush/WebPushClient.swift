import AsyncHTTPClient
import Foundation
import HubCore
import HubHTTPSupport
public import Logging
import NIOCore

/// What a push service said to an accepted message.
public struct WebPushResponse: Sendable, Hashable {
    /// 201 normally.
    public var status: Int
    /// The message resource (`Location`), when given.
    public var location: String?
    /// The TTL the push service applied, when it echoed one.
    public var timeToLive: Int?
}

/// Sends encrypted Web Push messages with VAPID to any number of subscriptions.
///
/// Every endpoint is checked against ``WebPushConfiguration/endpointPolicy`` before anything is
/// sent. Requests never follow redirects (a redirect would carry the VAPID token elsewhere).
///
/// ```swift
/// let client = try WebPushClient(configuration: configuration)
/// let response = try await client.send(message, to: subscription, vapid: credentials)
/// ```
public final class WebPushClient: Sendable {
    public let configuration: WebPushConfiguration
    private let http: OwnedHTTPClient
    private let signer: VAPIDSigner
    private let logger: Logger

    /// - Throws: when a PEM in ``WebPushConfiguration/trustRootsPEM`` is not a certificate.
    public init(
        configuration: WebPushConfiguration = WebPushConfiguration(), logger: Logger = Logger(label: "hub.webpush")
    )
        throws
    {
        self.http = try OwnedHTTPClient(trustRootsPEM: configuration.trustRootsPEM)
        self.configuration = configuration
        self.signer = VAPIDSigner(
            lifetime: TimeInterval(configuration.tokenLifetime.components.seconds), now: configuration.now)
        self.logger = logger
    }

    /// Encrypts `message` for `subscription` and POSTs it to its push service with a VAPID token.
    /// - Returns: the push service's answer when it accepted the message (2xx).
    /// - Throws: ``WebPushError``: a refused endpoint, an oversized payload or an unusable key before
    ///   sending; the push service's non-2xx answer (status, reason, `Retry-After`); network failures.
    public func send(
        _ message: WebPushMessage, to subscription: WebPushSubscription, vapid: VAPIDCredentials
    )
        async throws(WebPushError) -> WebPushResponse
    {
        if let problem = configuration.endpointPolicy.problem(with: subscription.endpoint) {
            throw WebPushError(
                code: .endpointNotAllowed, message: "the subscription's endpoint \(problem); nothing was sent")
        }
        guard let audience = subscription.origin else {
            throw WebPushError(code: .invalidSubscription, message: "the subscription's endpoint has no origin")
        }
        let body = try WebPushEncryption.encrypt(message.payload, for: subscription)
        let authorization: String
        do {
            authorization = try signer.authorization(vapid, audience: audience)
        } catch {
            throw WebPushError(
                code: .vapidUnavailable, message: "the VAPID token could not be signed", underlying: error)
        }
        var request = HTTPClientRequest(url: subscription.endpoint)
        request.method = .POST
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "TTL", value: String(message.timeToLive))
        if let urgency = message.urgency { request.headers.add(name: "Urgency", value: urgency.rawValue) }
        if let topic = message.topic { request.headers.add(name: "Topic", value: topic.value) }
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "Content-Length", value: String(body.count))
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: Int
        let header: [String: String]
        let text: String
        do {
            let response = try await http.client.execute(request, timeout: TimeAmount(configuration.requestTimeout))
            let collected = try await response.body.collect(upTo: 64 * 1024)
            status = Int(response.status.code)
            header = Dictionary(
                ["location", "ttl", "retry-after"].compactMap { name in
                    response.headers.first(name: name).map { (name, $0) }
                },
                uniquingKeysWith: { first, _ in first })
            text = String(buffer: collected)
        } catch {
            throw WebPushError(
                code: .networkFailure, message: "the push service did not answer: \(error)", underlying: error)
        }
        if (200...299).contains(status) {
            return WebPushResponse(
                status: status, location: header["location"], timeToLive: header["ttl"].flatMap { Int($0) })
        }
        throw WebPushError(
            code: WebPushErrorCode(status: status), message: Self.advice(status), status: status,
            reason: String(text.prefix(512)),
            retryAfter: RetryAfter.parse(header["retry-after"], now: configuration.now()))
    }

    /// Closes the HTTP connections. Sends after this fail with ``WebPushErrorCode/networkFailure``.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    /// What an operator should do about a status.
    static func advice(_ status: Int) -> String {
        switch status {
        case 400: "the push service found a header or the encoding wrong; this is a hub bug worth reporting"
        case 401, 403:
            "the push service refuses the VAPID token or key: check credentials.webpush is the key the page "
                + "subscribed with (applicationServerKey) and its subject is a mailto: or https: URL"
        case 404, 410: "the subscription expired or the user unsubscribed"
        case 413: "the encrypted body is larger than the push service accepts"
        case 429: "this sender is over the push service's rate limit"
        case 500...599: "the push service failed; retrying later"
        default: "the push service answered \(status)"
        }
    }
}
