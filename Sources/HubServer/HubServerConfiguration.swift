public import HubCore

/// How the HTTP API of a hub listens and protects itself; `HubConfig` maps hub.yaml's `server`
/// section onto it.
///
/// ```swift
/// let configuration = HubServerConfiguration(
///     port: 8080, adminToken: Secret("…", source: "env:HUB_ADMIN_TOKEN"),
///     cursorKey: Array(cursorKeySecret.revealBytes()))
/// ```
public struct HubServerConfiguration: Sendable {
    /// The address to bind; `127.0.0.1` keeps the hub private to the machine (put a TLS proxy in front).
    public var host: String
    /// The TCP port to bind; `0` picks a free one.
    public var port: Int
    /// The bearer token of the admin routes and of the console's sign-in. `nil` disables them:
    /// the admin routes answer 403, the console 404.
    public var adminToken: Secret?
    /// The largest request body accepted, in bytes; larger bodies are refused with 413 `body-too-large`.
    public var maxBodyBytes: Int
    /// The largest body of a batch publish (`POST /v1/apps/{app}/notifications/batch`), a Graph
    /// batch or a broadcast (whose audience may list 100,000 users), in bytes: up to 1,000 publish
    /// bodies in one request, so a limit of its own (8 MiB by default: a
    /// thousand items of ~8 KiB each). Larger bodies are refused with 413 `body-too-large`.
    public var maxBatchBodyBytes: Int = 8 << 20
    /// The HMAC-SHA256 key that makes feed cursors and Graph subscription IDs (`X-UNS-ID`)
    /// tamper-evident. Use at least 32 random bytes and keep it across restarts, or every
    /// cursor and subscription ID handed out before becomes invalid.
    public var cursorKey: [UInt8]
    /// How often a server-sent-event stream writes a `: keepalive` comment when nothing changed.
    public var sseHeartbeat: Duration
    /// The longest a long-poll (`wait=`) may wait; longer requests are clamped to it.
    public var maxWait: Duration
    /// How long a Graph subscription ID from `POST /v1/apps/{app}/me/subscription` stays valid.
    public var subscriptionLifetime: Duration
    /// Timeouts and caps of connections (hub.yaml `server.connections`).
    public var connections = ConnectionLimits()
    /// The addresses of reverse proxies in front of the hub (exact IP addresses, hub.yaml
    /// `server.trustedProxies`): they are exempt from ``ConnectionLimits/maxConnectionsPerClient``,
    /// and their `X-Forwarded-For` names the client for the `clientIP` rate limit.
    public var trustedProxies: [String] = []
    /// Inbound rate limits of every app (hub.yaml `rateLimits`) …
    public var rateLimits = RateLimits()
    /// … and of the apps that override them (`apps[].rateLimits`), by app ID.
    public var appRateLimits: [String: RateLimits] = [:]
    /// The `hub config check` report the console's configuration page shows, made when the page
    /// is opened (`hub serve` checks hub.yaml again). `nil`: the page says there is none.
    public var configReport: (@Sendable () async -> ConsoleConfigReport)?

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        adminToken: Secret? = nil,
        maxBodyBytes: Int = 64 * 1024,
        cursorKey: [UInt8],
        sseHeartbeat: Duration = .seconds(15),
        maxWait: Duration = .seconds(60),
        subscriptionLifetime: Duration = .seconds(30 * 86_400)
    ) {
        self.host = host
        self.port = port
        self.adminToken = adminToken
        self.maxBodyBytes = maxBodyBytes
        self.cursorKey = cursorKey
        self.sseHeartbeat = sseHeartbeat
        self.maxWait = maxWait
        self.subscriptionLifetime = subscriptionLifetime
    }
}
