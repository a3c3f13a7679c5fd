public import HubEmulatorKit
import JWTKit
import Synchronization

public import struct Foundation.Date

/// A local stand-in for Google's OAuth token endpoint and FCM HTTP v1 `messages:send`, over TLS on
/// 127.0.0.1, that accepts and rejects what the real services do.
///
/// - `POST /token` verifies the RS256 service-account assertion against the registered account's
///   public key (`kid`, `iss`, `aud` = this token URI or Google's `https://oauth2.googleapis.com/token`,
///   which Google's own libraries always send; `scope`; `iat` and `exp` in whole seconds,
///   `exp − iat ≤ 3600`, clock skew ≤ 60 s) and issues access tokens.
/// - `POST /v1/projects/{project}/messages:send` checks the bearer token and its project, the JSON
///   shape (one target, string-only `data`, reserved keys, Android priority and `ttl`, the 4096-byte
///   limit) and answers with Google's error bodies (`google.rpc.Status` with an `FcmError` detail).
///
/// Knobs script what real FCM does to real senders: dead or foreign tokens, per-minute quota,
/// 503 bursts, expired access tokens. HTTP/2 is offered by ALPN (HTTP/1.1 too).
///
/// ```swift
/// let emulator = try await FCMEmulator.start()
/// try await emulator.register(.primary)
/// let credentials = FCMTestServiceAccount.primary.credentials(tokenURI: emulator.tokenURI)
/// // FCMConfiguration(sendBaseURL: emulator.baseURL, trustRootsPEM: [emulator.trustRootPEM])
/// ```
public final class FCMEmulator: Sendable {
    /// A failure scripted for one device token.
    public struct TokenFailure: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// 404 `NOT_FOUND` / `UNREGISTERED`: the app instance is gone.
        public static let unregistered = TokenFailure(rawValue: "UNREGISTERED")
        /// 403 `PERMISSION_DENIED` / `SENDER_ID_MISMATCH`: the token belongs to another project.
        public static let senderIDMismatch = TokenFailure(rawValue: "SENDER_ID_MISMATCH")
        /// 400 `INVALID_ARGUMENT`: "The registration token is not a valid FCM registration token"
        /// (a token that never was one, or of another app: drop it).
        public static let invalidArgument = TokenFailure(rawValue: "INVALID_ARGUMENT")
        /// 400 `INVALID_ARGUMENT` about a field of the message, not the token ("Invalid value at
        /// 'message.android.ttl'"): the message is wrong, the device is not.
        public static let invalidField = TokenFailure(rawValue: "INVALID_ARGUMENT_FIELD")
        /// 401 `UNAUTHENTICATED` / `THIRD_PARTY_AUTH_ERROR`: the APNs or Web Push key in Firebase is bad.
        public static let thirdPartyAuthError = TokenFailure(rawValue: "THIRD_PARTY_AUTH_ERROR")
        /// 500 `INTERNAL` / `INTERNAL`.
        public static let internalError = TokenFailure(rawValue: "INTERNAL")
    }

    /// A message `messages:send` accepted.
    public struct ReceivedMessage: Sendable, Hashable {
        public var project: String
        public var token: String?
        public var topic: String?
        public var data: [String: String]
        public var notificationTitle: String?
        public var notificationBody: String?
        /// `android.priority` as sent (`HIGH`, `NORMAL`), if any.
        public var androidPriority: String?
        /// `android.ttl` as sent, such as `"86400s"`.
        public var androidTTL: String?
        public var collapseKey: String?
        public var restrictedPackageName: String?
        /// `android.notification.tag`.
        public var androidTag: String?
        public var validateOnly: Bool
        /// `HTTP/2.0` or `HTTP/1.1`.
        public var httpVersion: String
        /// The request body as received.
        public var json: String
    }

    struct Account {
        var projectID: String
        var privateKeyID: String
        var keys: JWTKeyCollection
    }

    struct State {
        var accounts: [String: Account] = [:]
        var accessTokens: [String: (project: String, expires: Date)] = [:]
        var tokenFailures: [String: TokenFailure] = [:]
        var quotaPerMinute: Int?
        var quotaWindows: [String: (start: Date, count: Int)] = [:]
        var unavailable: (remaining: Int, retryAfter: Int?) = (0, nil)
        var accessTokenLifetime = 3599
        var recordsMessages = true
        var messages: [ReceivedMessage] = []
        var acceptedCount = 0
        var tokenExchanges = 0
        var rejectedAssertions: [String] = []
    }

    let state = Mutex(State())
    let now: @Sendable () -> Date
    private let listener: EmulatorListener
    /// The CA whose certificate clients must trust.
    public var authority: TestCertificateAuthority { listener.authority }

    private init(listener: EmulatorListener, now: @escaping @Sendable () -> Date) {
        self.listener = listener
        self.now = now
    }

    /// Starts an emulator on 127.0.0.1.
    /// - Parameters:
    ///   - authority: the CA that signs the server certificate (a new one by default).
    ///   - port: the port to listen on; 0 picks a free one.
    ///   - http2: offer `h2` by ALPN (default); `false` serves HTTP/1.1 only.
    ///   - ownThread: serve on an event-loop thread of its own rather than NIO's shared loops, so a
    ///     client benchmarked in the same process never shares a thread with the emulator.
    ///   - now: the emulator's clock, for assertion times and access-token expiry.
    public static func start(
        authority: TestCertificateAuthority? = nil, port: Int = 0, http2: Bool = true, ownThread: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> FCMEmulator {
        let emulator = try FCMEmulator(
            listener: EmulatorListener(authority: authority, commonName: "FCM emulator CA"), now: now)
        try await emulator.listener.start(port: port, http2: http2, ownThread: ownThread) { [weak emulator] request in
            emulator?.route(request) ?? .now(EmulatorResponse(status: 503))
        }
        return emulator
    }

    /// Stops listening and closes open connections.
    public func shutdown() async throws {
        try await listener.shutdown()
    }

    /// The port the emulator listens on.
    public var port: Int { listener.port }
    /// `https://127.0.0.1:<port>`: the send base URL to configure in the hub.
    public var baseURL: String { "https://127.0.0.1:\(port)" }
    /// The token endpoint, to use as the service account's `token_uri`.
    public var tokenURI: String { "\(baseURL)/token" }
    /// The PEM certificate of ``authority``, to trust in clients.
    public var trustRootPEM: String { authority.certificatePEM }

    // MARK: Accounts and knobs

    /// Lets `account` exchange assertions signed with its key for access tokens of its project.
    public func register(_ account: FCMTestServiceAccount) async throws {
        let key = try Insecure.RSA.PrivateKey(pem: account.privateKeyPEM).publicKey
        try await register(
            clientEmail: account.clientEmail, projectID: account.projectID, privateKeyID: account.privateKeyID,
            publicKeyPEM: key.pemRepresentation)
    }

    /// Lets a service account whose private key stays elsewhere exchange assertions: they must carry
    /// `kid` = `privateKeyID` and verify with `publicKeyPEM` (`-----BEGIN PUBLIC KEY-----`).
    public func register(
        clientEmail: String, projectID: String, privateKeyID: String, publicKeyPEM: String
    ) async throws {
        let keys = JWTKeyCollection()
        let key = try Insecure.RSA.PublicKey(pem: publicKeyPEM)
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: privateKeyID))
        let account = Account(projectID: projectID, privateKeyID: privateKeyID, keys: keys)
        state.withLock { $0.accounts[clientEmail] = account }
    }

    /// Scripts `failure` for every send to `token` (`nil` removes it).
    public func setFailure(_ failure: TokenFailure?, forToken token: String) {
        state.withLock { $0.tokenFailures[token] = failure }
    }

    /// Limits sends per project to `limit` in each rolling minute; over it, 429 `QUOTA_EXCEEDED`
    /// with `Retry-After` until the window ends. `nil` removes the limit.
    public func setQuota(perMinute limit: Int?) {
        state.withLock {
            $0.quotaPerMinute = limit
            $0.quotaWindows = [:]
        }
    }

    /// Answers the next `count` sends with 503 `UNAVAILABLE`, with `Retry-After` when given.
    public func failNextSends(_ count: Int, retryAfter seconds: Int? = nil) {
        state.withLock { $0.unavailable = (count, seconds) }
    }

    /// Invalidates every access token issued so far: sends with them get 401 `UNAUTHENTICATED`.
    public func expireAccessTokens() {
        state.withLock { $0.accessTokens = [:] }
    }

    /// The `expires_in` of access tokens issued from now on (3599 s by default).
    public func setAccessTokenLifetime(seconds: Int) {
        state.withLock { $0.accessTokenLifetime = seconds }
    }

    /// Whether accepted messages are kept for ``messages`` (on by default; benchmarks turn it off).
    public func setRecordsMessages(_ records: Bool) {
        state.withLock { $0.recordsMessages = records }
    }

    /// Issues an access token for `project` without an assertion (for load generators such as h2load).
    public func issueAccessToken(project: String) -> String {
        let token = "ya29.emulator-" + EmulatorText.randomHex(24)
        state.withLock { state in
            state.accessTokens[token] = (project, now().addingTimeInterval(Double(state.accessTokenLifetime)))
        }
        return token
    }

    // MARK: Records

    /// Accepted messages in arrival order (validate-only ones included, flagged).
    public var messages: [ReceivedMessage] { state.withLock { $0.messages } }
    /// Accepted sends, counted even when messages are not recorded.
    public var acceptedCount: Int { state.withLock { $0.acceptedCount } }
    /// Successful assertion exchanges.
    public var tokenExchanges: Int { state.withLock { $0.tokenExchanges } }
    /// Why rejected assertions were rejected, in order.
    public var rejectedAssertions: [String] { state.withLock { $0.rejectedAssertions } }

    /// Forgets recorded messages and counters (not accounts, tokens or knobs).
    public func resetRecords() {
        state.withLock {
            $0.messages = []
            $0.acceptedCount = 0
            $0.tokenExchanges = 0
            $0.rejectedAssertions = []
        }
    }

    // MARK: Routing

    func route(_ request: EmulatorRequest) -> EmulatorReply {
        if request.path == "/token" { return tokenEndpoint(request) }
        if request.path.hasPrefix("/v1/projects/") && request.path.hasSuffix("/messages:send") {
            return .now(send(request))
        }
        return .now(Self.googleError(404, "NOT_FOUND", "The requested URL \(request.path) was not found."))
    }

}
