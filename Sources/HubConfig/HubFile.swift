public import HubCore

/// hub.yaml as loaded: server, store, limits, logging, dispatcher, broadcasts and the cross-device apps.
public struct HubFile: Sendable {
    /// The path it was loaded from.
    public var path: String
    public var server: ServerSettings
    public var store: StoreSettings
    public var logging: LoggingSettings
    public var limits: LimitSettings
    public var apps: [CrossDeviceApp]
    /// `transports`: each plugin's settings as its ``TransportPlugin/readSettings(_:)`` returned
    /// them (its defaults when hub.yaml has no section for it), by transport.
    public var transports: [TransportID: any Sendable] = [:]
    /// `rateLimits`: inbound rate limits of every app.
    public var rateLimits = RateLimitSettings()
    /// `apps[].rateLimits`: the apps' own, by app ID (what they do not give comes from `rateLimits`).
    public var appRateLimits: [String: RateLimitSettings] = [:]
    /// `dispatcher`: how this instance works the outbox.
    public var dispatcher = DispatcherSettings()
    /// `broadcasts`: how this instance expands broadcasts.
    public var broadcasts = BroadcastSettings()

    /// The values `Hub` runs on.
    public func hubConfiguration() -> HubConfiguration {
        var configuration = HubConfiguration(
            apps: apps, defaultLifetime: limits.defaultLifetime, maxLifetime: limits.maxLifetime,
            maxPayloadBytes: limits.maxPayloadBytes, retention: limits.retention,
            dispatcher: dispatcher.applied(to: DispatcherConfiguration()))
        configuration.maxEndpointsPerUser = limits.maxEndpointsPerUser
        configuration.broadcasts = broadcasts.applied(to: configuration.broadcasts)
        return configuration
    }
}

/// The `server:` section.
public struct ServerSettings: Sendable {
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// Bearer token of the admin routes; admin routes are off without one.
    public var adminToken: Secret?
    /// Key that signs feed cursors and Graph subscription IDs; without one `hub serve` keeps a
    /// generated key beside the SQLite database.
    public var cursorSecret: Secret?
    public var maxBodyBytes: Int = 64 * 1024
    /// `maxBatchBodyBytes`: the largest body of a batch publish (up to 1,000 items).
    public var maxBatchBodyBytes: Int = 8 << 20
    /// Names this instance in delivery leases. Keep it stable across restarts and unique among
    /// instances sharing a store; `nil` means host:port (host:pid when listening on port 0).
    public var instanceID: String?
    /// A listener of its own for `/metrics`; `nil` serves it on the API's port.
    public var metricsListen: ListenAddress?
    /// `connections`: timeouts and caps of the HTTP connections.
    public var connections = ConnectionSettings()
    /// `trustedProxies`: reverse proxies' IP addresses (exempt from the per-client connection cap).
    public var trustedProxies: [String] = []
    public init() {}
}

/// A `host:port` to listen on.
public struct ListenAddress: Sendable, Hashable {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}

/// The `store:` section.
public enum StoreSettings: Sendable {
    /// The embedded default. A relative path is relative to hub.yaml's folder.
    case sqlite(path: String)
    case postgres(url: Secret, poolSize: Int)
}

/// The `logging:` section.
public struct LoggingSettings: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case text
        case json
    }
    public var format: Format = .text
    /// trace, debug, info, notice, warning, error, critical.
    public var level: String = "info"
    public init() {}
}

/// The `limits:` section.
public struct LimitSettings: Sendable {
    public var defaultLifetime: Duration = .seconds(7 * 86_400)
    public var maxLifetime: Duration = .seconds(30 * 86_400)
    public var maxPayloadBytes: Int = 4096
    public var retention: Duration = .seconds(7 * 86_400)
    /// `maxEndpointsPerUser`: the most endpoints one user of an app may have (an app's own
    /// `apps[].maxEndpointsPerUser` comes first).
    public var maxEndpointsPerUser: Int = EndpointLimit.defaultMaxPerUser
    public init() {}
}
