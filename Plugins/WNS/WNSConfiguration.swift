public import struct Foundation.Date

/// How the WNS client reaches Microsoft: token endpoints, which channel hosts it may post to,
/// trust, timeouts, defaults for taps, and the clock. The defaults talk to production WNS; tests and
/// `hub emulate wns` point the token URLs at an emulator, allow its host in ``channelPolicy`` and
/// trust its CA through ``trustRootsPEM``.
///
/// ```swift
/// var configuration = WNSConfiguration()
/// configuration.classicTokenURL = emulator.classicTokenURL
/// configuration.channelPolicy = WNSChannelPolicy(additionalHosts: [emulator.host])
/// configuration.trustRootsPEM = [emulator.trustRootPEM]
/// ```
public struct WNSConfiguration: Sendable {
    /// The classic (package SID) token endpoint.
    public static let productionClassicTokenURL = "https://login.live.com/accesstoken.srf"
    /// The Microsoft Entra ID authority; `/{tenant}/oauth2/v2.0/token` is appended.
    public static let productionEntraAuthority = "https://login.microsoftonline.com"
    /// The scope of the classic flow.
    public static let classicScope = "notify.windows.com"
    /// The scope of the Entra ID flow.
    public static let entraScope = "https://wns.windows.com/.default"

    /// Where package-SID credentials get access tokens.
    public var classicTokenURL: String
    /// Scheme and host of the Entra ID authority.
    public var entraAuthority: String
    /// Which channel URIs may receive notifications (and so the access token).
    public var channelPolicy: WNSChannelPolicy
    /// PEM certificates trusted in addition to the system's roots (an emulator's test CA).
    public var trustRootsPEM: [String]
    /// Longest wait for one HTTP exchange (token or send).
    public var requestTimeout: Duration
    /// An access token is renewed this long before it expires (at most half its lifetime).
    public var tokenRefreshMargin: Duration
    /// `X-WNS-TTL` of shoulder taps, which carry no notification and so no expiry of their own.
    public var tapTimeToLive: Duration
    /// `X-WNS-Cache-Policy` of shoulder taps. `cache` (the default) lets WNS keep the newest raw
    /// notification for an offline device, which is what a coalescing "sync your feed" tap wants;
    /// WNS's own default for raw is `no-cache`.
    public var tapCachePolicy: WNSCachePolicy
    /// The wall clock for token expiry, TTLs and `Retry-After` dates. The plugin sets it to the hub's
    /// clock (`TransportContext.now`); the system's by default.
    public var now: @Sendable () -> Date

    public init(
        classicTokenURL: String = WNSConfiguration.productionClassicTokenURL,
        entraAuthority: String = WNSConfiguration.productionEntraAuthority,
        channelPolicy: WNSChannelPolicy = WNSChannelPolicy(),
        trustRootsPEM: [String] = [],
        requestTimeout: Duration = .seconds(15),
        tokenRefreshMargin: Duration = .seconds(300),
        tapTimeToLive: Duration = .seconds(86_400),
        tapCachePolicy: WNSCachePolicy = .cache,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.classicTokenURL = classicTokenURL
        self.entraAuthority = entraAuthority
        self.channelPolicy = channelPolicy
        self.trustRootsPEM = trustRootsPEM
        self.requestTimeout = requestTimeout
        self.tokenRefreshMargin = tokenRefreshMargin
        self.tapTimeToLive = tapTimeToLive
        self.tapCachePolicy = tapCachePolicy
        self.now = now
    }
}
