import Yams

/// `server.connections`: timeouts and caps of the HTTP server's connections (HubServer's
/// `ConnectionLimits` has the same defaults and says what each one guards against).
public struct ConnectionSettings: Sendable, Equatable {
    /// `headerTimeout`: a request head must arrive within this, from its first byte.
    public var headerTimeout: Duration = .seconds(10)
    /// `bodyTimeout`: a request body must arrive in full within this, from the end of its head.
    public var bodyTimeout: Duration = .seconds(30)
    /// `idleTimeout`: a keep-alive connection without a request in progress is closed after this.
    public var idleTimeout: Duration = .seconds(60)
    /// `max`: connections open at once; more are answered 503 and closed.
    public var max: Int = 10_000
    /// `maxPerClient`: connections open at once from one IP address (trusted proxies exempt).
    public var maxPerClient: Int = 256
    /// `maxActiveRequests`: requests handled at once, across all connections; the next ones wait
    /// their turn (requests still receiving their body are not counted).
    public var maxActiveRequests: Int = 256
    public init() {}
}

extension ConfigReader {
    static let connectionKeys = [
        "headerTimeout", "bodyTimeout", "idleTimeout", "max", "maxPerClient", "maxActiveRequests",
    ]

    mutating func readConnections(_ node: Node) -> ConnectionSettings {
        var settings = ConnectionSettings()
        let path = "server.connections"
        guard let entries = mapping(node, at: path, allowed: Self.connectionKeys) else { return settings }
        let timeouts: [(String, WritableKeyPath<ConnectionSettings, Duration>)] = [
            ("headerTimeout", \.headerTimeout), ("bodyTimeout", \.bodyTimeout), ("idleTimeout", \.idleTimeout),
        ]
        for (key, field) in timeouts {
            if let value = duration(
                entries[key], at: "\(path).\(key)", in: .seconds(1) ... .seconds(3600), mustBe: "from 1s to 1h")
            {
                settings[keyPath: field] = value
            }
        }
        if let value = integer(entries["max"], at: "\(path).max", in: 1...1_000_000) { settings.max = value }
        if let value = integer(entries["maxPerClient"], at: "\(path).maxPerClient", in: 1...1_000_000) {
            settings.maxPerClient = value
        }
        if let value = integer(entries["maxActiveRequests"], at: "\(path).maxActiveRequests", in: 1...100_000) {
            settings.maxActiveRequests = value
        }
        if settings.maxPerClient > settings.max, let node = entries["maxPerClient"] {
            warning(
                node,
                "'\(path).maxPerClient' (\(settings.maxPerClient)) is above '\(path).max' (\(settings.max)); the total cap applies first"
            )
        }
        return settings
    }

    /// `server.trustedProxies`: exact IP addresses of the reverse proxies in front of the hub.
    mutating func readTrustedProxies(_ node: Node) -> [String] {
        guard let items = sequence(node, at: "server.trustedProxies") else { return [] }
        var addresses: [String] = []
        for item in items {
            guard let text = string(item, at: "server.trustedProxies") else { continue }
            if Self.isIPAddress(text) {
                addresses.append(text)
            } else {
                error(item, "'server.trustedProxies' takes IP addresses such as 127.0.0.1 or ::1, not '\(text)'")
            }
        }
        return addresses
    }

    static func isIPAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4 { return parts.allSatisfy { UInt8($0) != nil && !$0.isEmpty } }
        return text.contains(":") && text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
}
