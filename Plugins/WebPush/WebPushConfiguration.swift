public import Foundation

/// How the `webpush` transport reaches push services. Each app's VAPID identity is its
/// ``WebPushCredentials`` (`credentials.webpush`).
///
/// Embedders fill it in code; `hub serve` fills it from hub.yaml's `transports.webpush`
/// (``WebPushPlugin``).
public struct WebPushConfiguration: Sendable {
    /// Which push-service URLs subscriptions may name.
    public var endpointPolicy: WebPushEndpointPolicy
    /// The longest one request may take, connection included.
    public var requestTimeout: Duration
    /// Certificates trusted besides the system's (an emulator's CA).
    public var trustRootsPEM: [String]
    /// How long a push service keeps a shoulder tap for an offline browser (`TTL`); visible messages
    /// use the time until the notification expires.
    public var tapTimeToLive: Duration
    /// How far ahead a VAPID token's `exp` is (at most 24 hours).
    public var tokenLifetime: Duration
    /// The push services whose subscriptions get visible notifications as declarative push
    /// messages unless they registered `declarative: false` (entries as in
    /// ``WebPushEndpointPolicy/allowedHosts``); by default Apple's, `*.push.apple.com`.
    public var declarativeHosts: [String]
    /// The wall clock for TTLs, VAPID expiry and `Retry-After` dates. The plugin sets it to the hub's
    /// clock (`TransportContext.now`); the system's by default.
    public var now: @Sendable () -> Date

    public init(
        endpointPolicy: WebPushEndpointPolicy = WebPushEndpointPolicy(), requestTimeout: Duration = .seconds(15),
        trustRootsPEM: [String] = [],
        tapTimeToLive: Duration = .seconds(86_400),
        tokenLifetime: Duration = .seconds(12 * 3600), declarativeHosts: [String] = ["*.push.apple.com"],
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.declarativeHosts = declarativeHosts
        self.endpointPolicy = endpointPolicy
        self.requestTimeout = requestTimeout
        self.trustRootsPEM = trustRootsPEM
        self.tapTimeToLive = tapTimeToLive
        self.tokenLifetime = tokenLifetime
        self.now = now
    }
}
