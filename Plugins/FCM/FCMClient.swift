import Foundation
import HubCore
import HubHTTP2
import HubHTTPSupport
public import Logging
import NIOCore
import NIOHPACK
import Synchronization

/// Sends FCM HTTP v1 messages on behalf of any number of service accounts.
///
/// `messages:send` goes over HubHTTP2's `HTTP2Client` (a few long-lived HTTP/2 connections, each
/// send a stream); the OAuth token endpoint, called about once an hour per account, over
/// AsyncHTTPClient. One access-token holder per service account. A send whose access token FCM refuses with 401 gets a fresh token
/// and is sent once more; every other answer is returned as it came, as an ``FCMError``.
///
/// ```swift
/// let client = try FCMClient()
/// let name = try await client.send(message, credentials: account)
/// try await client.shutdown()
/// ```
public final class FCMClient: Sendable {
    public let configuration: FCMConfiguration
    /// For the token endpoint.
    private let http: OwnedHTTPClient
    /// For `messages:send`.
    private let http2: HTTP2Client
    /// ``FCMConfiguration/sendBaseURL`` split once: where sends go and the path before `/v1/…`.
    private let sendBase: Result<(origin: HTTP2Origin, path: String), FCMError>
    private let logger: Logger
    /// Token holders by account; the full credentials are compared on lookup (cheap: the key's
    /// bytes are usually the very same buffer), never hashed per send.
    private let providers = Mutex<[ProviderKey: (credentials: FCMCredentials, provider: FCMAccessTokenProvider)]>([:])

    private struct ProviderKey: Hashable {
        var projectID: String
        var clientEmail: String
        var privateKeyID: String?
        var tokenURI: String
    }

    /// - Throws: when a PEM in ``FCMConfiguration/trustRootsPEM`` is not a certificate.
    public init(configuration: FCMConfiguration = FCMConfiguration(), logger: Logger = Logger(label: "hub.fcm")) throws
    {
        self.configuration = configuration
        self.http = try OwnedHTTPClient(trustRootsPEM: configuration.trustRootsPEM)
        self.http2 = try HTTP2Client(
            configuration: HTTP2Client.Configuration(trustRootsPEM: configuration.trustRootsPEM), logger: logger)
        self.logger = logger
        do throws(HTTP2ClientError) {
            var (origin, path) = try HTTP2Origin.split(url: configuration.sendBaseURL)
            while path.hasSuffix("/") { path.removeLast() }
            sendBase = .success((origin, path))
        } catch {
            sendBase = .failure(
                FCMError(
                    code: .networkFailure, message: "the FCM send URL \(configuration.sendBaseURL) is not usable",
                    underlying: error))
        }
    }

    /// Sends `message` as the service account `credentials`.
    /// - Parameters:
    ///   - message: what to send, and to which token or topic.
    ///   - credentials: the service account it is sent as.
    ///   - validateOnly: FCM checks the message and the credentials but delivers nothing.
    /// - Returns: the message name FCM assigned, `projects/{project}/messages/{id}`.
    /// - Throws: ``FCMError``: FCM's answer, ``FCMErrorCode/payloadTooLarge`` before sending,
    ///   ``FCMErrorCode/authenticationFailed`` when no access token could be had, or
    ///   ``FCMErrorCode/networkFailure``.
    public func send(
        _ message: FCMMessage, credentials: FCMCredentials, validateOnly: Bool = false
    ) async throws(FCMError) -> String {
        let size = message.payloadSize
        guard size <= FCMMessage.payloadLimit else {
            throw FCMError(
                code: .payloadTooLarge,
                message: "the message carries \(size) bytes of data and notification; FCM allows "
                    + "\(FCMMessage.payloadLimit)")
        }
        let body = message.requestBody(validateOnly: validateOnly)
        let provider = provider(for: credentials)
        let (origin, base) = try sendBase.get()
        let path = "\(base)/v1/projects/\(credentials.projectID)/messages:send"
        let token: String
        if let cached = provider.cachedToken() {
            token = cached
        } else {
            token = try await provider.token()
        }
        let first = await post(body, to: origin, path: path, bearer: token)
        guard case .failure(let error) = first, error.httpStatus == 401, error.code != .thirdPartyAuthError else {
            return try first.get()
        }
        logger.debug(
            "FCM refused the access token; exchanging a new one", metadata: ["account": "\(credentials.clientEmail)"])
        provider.invalidate(token)
        return try await post(body, to: origin, path: path, bearer: try await provider.token()).get()
    }

    /// Checks that `credentials` can send: exchanges an assertion for an access token and sends a
    /// validate-only message to a topic, which FCM checks without delivering anything.
    /// - Throws: ``FCMError`` saying what is wrong (key, project, permissions).
    public func validate(credentials: FCMCredentials) async throws(FCMError) {
        let probe = FCMMessage(target: .topic("hub-credential-check"), data: ["hub": "check"])
        _ = try await send(probe, credentials: credentials, validateOnly: true)
    }

    /// Closes the HTTP connections (sends still running get a moment to finish). Sends after this
    /// fail with ``FCMErrorCode/networkFailure``.
    public func shutdown() async throws {
        await http2.shutdown(grace: .seconds(2))
        try await http.shutdown()
    }

    private func provider(for credentials: FCMCredentials) -> FCMAccessTokenProvider {
        let key = ProviderKey(
            projectID: credentials.projectID, clientEmail: credentials.clientEmail,
            privateKeyID: credentials.privateKeyID, tokenURI: credentials.tokenURI)
        return providers.withLock { providers in
            if let existing = providers[key], existing.credentials == credentials { return existing.provider }
            let created = FCMAccessTokenProvider(
                credentials: credentials, http: http.client, configuration: configuration, logger: logger)
            providers[key] = (credentials, created)
            return created
        }
    }

    /// One `messages:send` exchange. - Returns: the message name, or FCM's error.
    private func post(
        _ body: [UInt8], to origin: HTTP2Origin, path: String, bearer token: String
    ) async -> Result<String, FCMError> {
        let headers: HPACKHeaders = [
            "authorization": "Bearer \(token)", "content-type": "application/json; charset=UTF-8",
        ]
        let request = HTTP2Request(method: "POST", path: path, headers: headers, body: ByteBuffer(bytes: body))
        let response: HTTP2Response
        do {
            response = try await http2.execute(request, to: origin, timeout: configuration.requestTimeout)
        } catch {
            return .failure(FCMError(code: .networkFailure, message: "FCM did not answer: \(error)", underlying: error))
        }
        let bytes = Data(response.body.readableBytesView)
        if response.status == 200 {
            return .success(Self.messageName(in: bytes))
        }
        let decoded = try? JSONDecoder().decode(GoogleErrorBody.self, from: bytes)
        return .failure(
            FCMError(
                code: FCMErrorCode(parsing: decoded?.fcmErrorCode), httpStatus: response.status,
                status: decoded?.error.status,
                message: decoded?.error.message ?? "HTTP \(response.status) without a Google error body",
                retryAfter: RetryAfter.parse(response.headers.first(name: "retry-after"), now: configuration.now())))
    }
}

extension FCMClient {
    /// The `name` of a success body `{"name": "projects/…/messages/…"}`, read without a JSON decoder
    /// (this runs once per send); empty when absent.
    static func messageName(in body: Data) -> String {
        let text = String(decoding: body, as: UTF8.self)
        guard let key = text.range(of: "\"name\""), let open = text[key.upperBound...].firstIndex(of: "\"") else {
            return ""
        }
        return String(text[text.index(after: open)...].prefix { $0 != "\"" })
    }
}
