import HubCore
public import HubHTTP2

public import struct Foundation.Date

extension APNSTransport {
    /// Where APNs is and how the transport talks to it. The defaults are Apple's servers and
    /// Apple's guidance; tests and `hub emulate apns` point both environments at an emulator.
    ///
    /// ```swift
    /// let emulator = APNSTransport.Configuration(
    ///     productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: 2197,
    ///     trustRoots: .pemFile("/tmp/apns-emulator-ca.pem"))
    /// ```
    public struct Configuration: Sendable {
        /// The server for production tokens: `api.push.apple.com:443`.
        public var production: Server = Server(host: "api.push.apple.com", port: 443)
        /// The server for development (sandbox) tokens: `api.sandbox.push.apple.com:443`.
        public var development: Server = Server(host: "api.sandbox.push.apple.com", port: 443)
        /// The certificate authorities the server certificate must chain to.
        public var trustRoots: TrustRoots = .system
        /// The most time one send may take, waiting for a connection and a stream included; a send
        /// that runs out answers `.retry`.
        public var requestTimeout: Duration = .seconds(15)
        /// The most time a new connection may take (TCP, TLS, the first HTTP/2 SETTINGS).
        public var connectTimeout: Duration = .seconds(10)
        /// Connections per (credentials, environment); more open only when all are full.
        public var maxConnections: Int = 8
        /// Streams this transport opens on one connection at most, below the server's own limit
        /// (`SETTINGS_MAX_CONCURRENT_STREAMS`, which is always obeyed). Spreads load over connections.
        public var maxStreamsPerConnection: Int = 500
        /// A connection without traffic for this long is checked with an HTTP/2 PING.
        public var pingInterval: Duration = .seconds(300)
        /// A PING not answered within this closes the connection; the next send opens a new one.
        public var pingTimeout: Duration = .seconds(10)
        /// How long a provider token is reused; clamped to Apple's 20–60 minutes.
        public var tokenRefreshInterval: Duration = .seconds(50 * 60)
        /// How long APNs stores a shoulder tap for an offline device. `.zero` (the default) sends
        /// `apns-expiration: 0`: a tap only says "sync", the feed keeps everything, the app syncs
        /// when it next runs, and APNs would keep only the newest tap per app anyway.
        public var shoulderTapLifetime: Duration = .zero
        /// Trim a visible notification's body (with "…") when the payload is over the limit,
        /// instead of rejecting it.
        public var trimsAlertBody: Bool = true
        /// Once this many distinct tokens of one set of credentials and environment were answered
        /// `BadDeviceToken` with no accepted push in between, one warning says the endpoints may
        /// have registered with the wrong environment, and further `BadDeviceToken` answers suspend
        /// their deliveries (instead of deactivating the endpoints; they show in
        /// `hub_deliveries_suspended` and the app's statistics) until APNs accepts a push again.
        /// The same token answered again does not count twice.
        public var badDeviceTokenWarningThreshold: Int = 10
        /// The wall clock for provider tokens' `iat`, `Retry-After` dates and expirations. The plugin
        /// sets it to the hub's clock (`TransportContext.now`); the system's by default.
        public var now: @Sendable () -> Date = { Date() }

        /// Apple's production and development servers on port 443.
        public init() {}

        /// Both environments on custom hosts and one port, for an emulator or a proxy.
        public init(productionHost: String, developmentHost: String, port: Int, trustRoots: TrustRoots = .system) {
            production = Server(host: productionHost, port: port)
            development = Server(host: developmentHost, port: port)
            self.trustRoots = trustRoots
        }

        /// The server for `environment`; anything but development goes to production.
        public func server(for environment: APNSEnvironment) -> Server {
            environment == .development ? development : production
        }
    }

    /// A host and port of an APNs server.
    public struct Server: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        /// 443, or 2197 (Apple's alternative for firewalls that block other HTTPS).
        public var port: Int
        public init(host: String, port: Int = 443) {
            self.host = host
            self.port = port
        }

        /// Where the HTTP/2 client connects; `:authority` is the host, with the port unless it is 443.
        var origin: HTTP2Origin { HTTP2Origin(scheme: "https", host: host, port: port) }

        public var description: String { "\(host):\(port)" }
    }

    /// The certificate authorities a server certificate must chain to: `.system` (what Apple's
    /// servers need), `.pem(text)` or `.pemFile(path)` (only those certificates, such as an
    /// emulator's test CA).
    public typealias TrustRoots = HTTP2TrustRoots
}
