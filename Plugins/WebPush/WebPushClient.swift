import Foundation
import HubCore
import HubHTTP2
public import Logging
import NIOCore
import NIOHPACK

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
/// sent. Requests go over HTTP/2 (HubHTTP2's `HTTP2Client`: a few long-lived connections per push
/// service, each message a stream), as every push service speaks it, and never follow redirects (a
/// redirect would carry the VAPID token elsewhere).
///
/// ```swift
/// let client = try WebPushClient(configuration: configuration)
/// let response = try await client.send(message, to: subscription, vapid: credentials)
/// ```
public final class WebPushClient: Sendable {
    public let configuration: WebPushConfiguration
    private let http2: HTTP2Client
    private let signer: VAPIDSigner
    private let logger: Logger

    /// - Throws: when a PEM in ``WebPushConfiguration/trustRootsPEM`` is not a certificate.
    public init(
        configuration: WebPushConfiguration = WebPushConfiguration(), logger: Logger = Logger(label: "hub.webpush")
    )
        throws
    {
        self.http2 = try HTTP2Client(
            configuration: HTTP2Client.Configuration(
                trustRootsPEM: configuration.trustRootsPEM, maximumResponseBodyBytes: 64 * 1024),
            logger: logger)
        self.configuration = configuration
        self.signer = VAPIDSigner(
            lifetime: TimeInterval(configuration.tokenLifetime.components.seconds), now: configuration.now)
        self.logger = logger
    }

    /// Encrypts `message` for `subscription` and POSTs it to its push service with a VAPID token.
    /// - Parameters:
    ///   - message: the plaintext and headers.
    ///   - subscription: where it goes and the keys it is encrypted for.
    ///   - vapid: the application server's VAPID key and contact; `nil` sends no `Authorization`
    ///     (a UnifiedPush distributor that does not ask for VAPID).
    /// - Returns: the push service's answer when it accepted the message (2xx).
    /// - Throws: ``WebPushError``: a refused endpoint, an oversized payload or an unusable key before
    ///   sending; the push service's non-2xx answer (status, reason, `Retry-After`); network failures.
    public func send(
        _ message: WebPushMessage, to subscription: WebPushSubscription, vapid: VAPIDCredentials?
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
        var authorization: String?
        do {
            authorization = try vapid.map { try signer.authorization($0, audience: audience) }
        } catch {
            throw WebPushError(
                code: .vapidUnavailable, message: "the VAPID token could not be signed", underlying: error)
        }
        let response: HTTP2Response
        do {
            let (origin, path) = try HTTP2Origin.split(url: subscription.endpoint)
            // The path names one subscription: kept out of the connection's HPACK table.
            let request = HTTP2Request(
                method: "POST", path: path, pathIndexing: .nonIndexable,
                headers: Self.headers(for: message, authorization: authorization), body: ByteBuffer(bytes: body))
            response = try await http2.execute(request, to: origin, timeout: configuration.requestTimeout)
        } catch {
            throw WebPushError(
                code: .networkFailure, message: "the push service did not answer: \(error)", underlying: error)
        }
        let status = response.status
        let header = { (name: String) in response.headers.first(name: name) }
        let text = String(buffer: response.body)
        if (200...299).contains(status) {
            return WebPushResponse(
                status: status, location: header("location"), timeToLive: header("ttl").flatMap { Int($0) })
        }
        throw WebPushError(
            code: WebPushErrorCode(status: status), message: Self.advice(status), status: status,
            reason: String(text.prefix(512)),
            retryAfter: RetryAfter.parse(header("retry-after"), now: configuration.now()))
    }

    /// GETs `url`, after the same policy check as a send (``WebPushConfiguration/endpointPolicy``),
    /// following no redirect: for a transport that asks a push server about an endpoint before
    /// using it (UnifiedPush's endpoint check).
    /// - Parameter url: the URL to read.
    /// - Returns: the status and at most the first 64 KiB of the body.
    /// - Throws: ``WebPushError``: ``WebPushErrorCode/endpointNotAllowed`` when the policy refuses
    ///   the URL (nothing was sent), ``WebPushErrorCode/networkFailure`` when no answer came.
    public func get(_ url: String) async throws(WebPushError) -> (status: Int, body: String) {
        if let problem = configuration.endpointPolicy.problem(with: url) {
            throw WebPushError(code: .endpointNotAllowed, message: "the endpoint \(problem); nothing was sent")
        }
        do {
            let (origin, path) = try HTTP2Origin.split(url: url)
            var headers = HPACKHeaders()
            headers.add(name: "accept", value: "application/json")
            let request = HTTP2Request(method: "GET", path: path, pathIndexing: .nonIndexable, headers: headers)
            let response = try await http2.execute(request, to: origin, timeout: configuration.requestTimeout)
            return (response.status, String(buffer: response.body))
        } catch {
            throw WebPushError(code: .networkFailure, message: "the server did not answer: \(error)", underlying: error)
        }
    }

    /// Closes the HTTP connections. Sends after this fail with ``WebPushErrorCode/networkFailure``.
    public func shutdown() async throws {
        await http2.shutdown()
    }

    /// The request headers (RFC 8030 §5, RFC 8291, RFC 8292); the client adds `content-length`.
    static func headers(for message: WebPushMessage, authorization: String?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        if let authorization { headers.add(name: "authorization", value: authorization) }
        headers.add(name: "ttl", value: String(message.timeToLive))
        if let urgency = message.urgency { headers.add(name: "urgency", value: urgency.rawValue) }
        if let topic = message.topic { headers.add(name: "topic", value: topic.value) }
        headers.add(name: "content-encoding", value: "aes128gcm")
        headers.add(name: "content-type", value: "application/octet-stream")
        return headers
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
