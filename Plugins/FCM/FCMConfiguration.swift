public import struct Foundation.Date

/// How the FCM client reaches Google: endpoints, trust, timeouts, the access-token refresh policy,
/// and the clock. The defaults talk to production FCM; tests and `hub emulate fcm` point
/// ``sendBaseURL`` and ``tokenURI`` at an emulator and trust its CA through ``trustRootsPEM``.
///
/// ```swift
/// var configuration = FCMConfiguration()
/// configuration.sendBaseURL = emulator.baseURL
/// configuration.trustRootsPEM = [emulator.trustRootPEM]
/// let transport = try FCMTransport(configuration: configuration)
/// ```
public struct FCMConfiguration: Sendable {
    /// `https://fcm.googleapis.com`.
    public static let productionSendBaseURL = "https://fcm.googleapis.com"
    /// The scope the assertion asks for.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// Scheme, host and port of the send API; `…/v1/projects/{project}/messages:send` is appended.
    public var sendBaseURL: String
    /// Replaces every service account's `token_uri` (where assertions are posted, and their `aud`);
    /// `nil` uses the account's own.
    public var tokenURI: String?
    /// PEM certificates trusted in addition to the system's roots (an emulator's test CA).
    public var trustRootsPEM: [String]
    /// Longest wait for one HTTP exchange (token or send).
    public var requestTimeout: Duration
    /// An access token is renewed this long before Google says it expires (at most half its lifetime).
    public var tokenRefreshMargin: Duration
    /// Lifetime of an assertion (`exp − iat`); Google accepts at most one hour.
    public var assertionLifetime: Duration
    /// `android.ttl` of shoulder taps, which carry no notification and so no expiry of their own.
    public var tapTimeToLive: Duration
    /// The least delay of a retry after `QUOTA_EXCEEDED` (Google: back off at least a minute).
    public var minimumQuotaRetry: Duration
    /// The wall clock for assertion times, token expiry, TTLs and `Retry-After` dates. The plugin sets
    /// it to the hub's clock (`TransportContext.now`); the system's by default.
    public var now: @Sendable () -> Date

    public init(
        sendBaseURL: String = FCMConfiguration.productionSendBaseURL,
        tokenURI: String? = nil,
        trustRootsPEM: [String] = [],
        requestTimeout: Duration = .seconds(15),
        tokenRefreshMargin: Duration = .seconds(300),
        assertionLifetime: Duration = .seconds(3600),
        tapTimeToLive: Duration = .seconds(86_400),
        minimumQuotaRetry: Duration = .seconds(60),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.sendBaseURL = sendBaseURL
        self.tokenURI = tokenURI
        self.trustRootsPEM = trustRootsPEM
        self.requestTimeout = requestTimeout
        self.tokenRefreshMargin = tokenRefreshMargin
        self.assertionLifetime = assertionLifetime
        self.tapTimeToLive = tapTimeToLive
        self.minimumQuotaRetry = minimumQuotaRetry
        self.now = now
    }
}
