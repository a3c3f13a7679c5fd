import AsyncHTTPClient
import Foundation
import HubCore
import HubHTTPSupport
public import Logging
import NIOCore
import Synchronization

/// Sends WNS notifications to channel URIs on behalf of any number of apps.
///
/// Every channel URI is checked against ``WNSConfiguration/channelPolicy`` before anything is sent,
/// so the access token only ever goes to WNS or a host the operator allowed. Requests use HTTP/1.1
/// with a `Content-Length` (WNS refuses chunked bodies) and never follow redirects. A send whose
/// access token WNS refuses with 401 gets a new token and is sent once more.
///
/// ```swift
/// let client = try WNSClient(configuration: configuration)
/// let response = try await client.send(.toast(WNSToast(title: "Hi")), to: channelURI, credentials: app)
/// ```
public final class WNSClient: Sendable {
    public let configuration: WNSConfiguration
    private let http: OwnedHTTPClient
    private let logger: Logger
    private let providers = Mutex<[WNSCredentials: WNSAccessTokenProvider]>([:])

    /// - Throws: when a PEM in ``WNSConfiguration/trustRootsPEM`` is not a certificate.
    public init(configuration: WNSConfiguration = WNSConfiguration(), logger: Logger = Logger(label: "hub.wns")) throws
    {
        self.configuration = configuration
        self.http = try OwnedHTTPClient(trustRootsPEM: configuration.trustRootsPEM, http1Only: true)
        self.logger = logger
    }

    /// Sends `notification` to the channel `channelURI` as the app `credentials`.
    /// - Returns: WNS's answer to an accepted request (200). Check ``WNSResponse/notificationStatus``:
    ///   `channelthrottled` means this channel gets too many notifications.
    /// - Throws: ``WNSError``: ``WNSErrorCode/channelNotAllowed`` or ``WNSErrorCode/bodyTooLarge``
    ///   before sending, token failures, or WNS's non-200 answer with its headers.
    public func send(
        _ notification: WNSNotification, to channelURI: String, credentials: WNSCredentials,
        options: WNSSendOptions = WNSSendOptions()
    ) async throws(WNSError) -> WNSResponse {
        if let problem = configuration.channelPolicy.problem(with: channelURI) {
            throw WNSError(code: .channelNotAllowed, message: "the channel URI \(problem); nothing was sent")
        }
        let body = notification.body
        guard body.count <= WNSNotification.payloadLimit else {
            throw WNSError(
                code: .bodyTooLarge,
                message:
                    "the \(notification.type) body is \(body.count) bytes; WNS allows \(WNSNotification.payloadLimit)")
        }
        let provider = provider(for: credentials)
        let token = try await provider.token()
        let first = try await post(notification, body: body, to: channelURI, bearer: token, options: options)
        guard first.status == 401 else { return try Self.accepted(first) }
        logger.debug("WNS refused the access token; getting a new one")
        provider.invalidate(token)
        let second = try await post(
            notification, body: body, to: channelURI, bearer: try await provider.token(), options: options)
        return try Self.accepted(second)
    }

    /// Checks that `credentials` can send: asks WNS's token service (classic or Entra ID) for an
    /// access token. Nothing is sent to a device.
    /// - Throws: ``WNSError`` saying what is wrong (SID, secret, tenant, client).
    public func validate(credentials: WNSCredentials) async throws(WNSError) {
        _ = try await provider(for: credentials).token()
    }

    /// Closes the HTTP connections. Sends after this fail with ``WNSErrorCode/networkFailure``.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    private func provider(for credentials: WNSCredentials) -> WNSAccessTokenProvider {
        providers.withLock { providers in
            if let existing = providers[credentials] { return existing }
            let created = WNSAccessTokenProvider(
                credentials: credentials, http: http.client, configuration: configuration, logger: logger)
            providers[credentials] = created
            return created
        }
    }

    /// `response` when WNS accepted the request, else the error for it.
    private static func accepted(_ response: WNSResponse) throws(WNSError) -> WNSResponse {
        guard response.status != 200 else { return response }
        throw WNSError(
            code: WNSErrorCode(status: response.status), response: response, message: advice(response.status))
    }

    /// What an operator should do about a status.
    static func advice(_ status: Int) -> String {
        switch status {
        case 400: "WNS found a header wrong or conflicting; this is a hub bug worth reporting"
        case 401: "WNS refused a freshly issued access token twice"
        case 403:
            "the app's credentials do not own this channel: check credentials.wns against the app that registered it"
        case 404: "WNS does not know this channel"
        case 405: "WNS accepts only POST here"
        case 406: "this sender is over WNS's throttle limit"
        case 410: "the channel expired (or WNS blocked the sending domain)"
        case 413: "the body is larger than WNS accepts (5000 bytes)"
        case 500...599: "WNS failed; retrying later"
        default: "WNS answered \(status)"
        }
    }

    private func post(
        _ notification: WNSNotification, body: [UInt8], to channelURI: String, bearer token: String,
        options: WNSSendOptions
    ) async throws(WNSError) -> WNSResponse {
        var request = HTTPClientRequest(url: channelURI)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer \(token)")
        request.headers.add(name: "content-type", value: notification.contentType)
        request.headers.add(name: "x-wns-type", value: notification.type)
        for (name, value) in notification.typeHeaders { request.headers.add(name: name, value: value) }
        if let ttl = options.timeToLive {
            request.headers.add(name: "X-WNS-TTL", value: String(max(0, ttl.components.seconds)))
        }
        if let priority = options.priority {
            request.headers.add(name: "X-WNS-PRIORITY", value: String(priority.rawValue))
        }
        if options.requestStatus { request.headers.add(name: "X-WNS-RequestForStatus", value: "true") }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.client.execute(request, timeout: TimeAmount(configuration.requestTimeout))
            _ = try await response.body.collect(upTo: 64 * 1024)
            let headers = response.headers
            let retryAfter = headers.first(name: "retry-after") ?? headers.first(name: "x-wns-continue-after")
            return WNSResponse(
                status: Int(response.status.code),
                notificationStatus: headers.first(name: "x-wns-status")
                    ?? headers.first(name: "x-wns-notificationstatus"),
                messageID: headers.first(name: "x-wns-msg-id"),
                errorDescription: headers.first(name: "x-wns-error-description"),
                debugTrace: headers.first(name: "x-wns-debug-trace"),
                deviceConnectionStatus: headers.first(name: "x-wns-deviceconnectionstatus"),
                correlationVector: headers.first(name: "ms-cv"),
                retryAfter: RetryAfter.parse(retryAfter, now: configuration.now()))
        } catch {
            throw WNSError(code: .networkFailure, message: "WNS did not answer: \(error)", underlying: error)
        }
    }
}
