import Yams

/// One inbound rate limit as hub.yaml gives it: `100/s`, `600/m`, `5000/h` (bursts of up to the
/// count, refilled evenly over the period), `off`, or not given (the level above applies).
public enum RateSetting: Sendable, Equatable {
    /// Not given: the top-level `rateLimits` value, or the hub's default.
    case inherit
    case off
    case limit(count: Int, period: Duration)
}

/// `rateLimits` (top level: every app) and `apps[].rateLimits` (one app's overrides). HubServer's
/// `RateLimits` holds the defaults and what each limit counts.
public struct RateLimitSettings: Sendable, Equatable {
    /// `publisherKey`: requests per publisher key.
    public var publisherKey: RateSetting = .inherit
    /// `userPublishes`: publishes per user.
    public var userPublishes: RateSetting = .inherit
    /// `deviceToken`: device requests per user token (feed reads, long-polls, state changes).
    public var deviceToken: RateSetting = .inherit
    /// `clientIP`: requests without valid credentials per client IP address.
    public var clientIP: RateSetting = .inherit
    public init() {}

    /// These settings, with what they do not give taken from `fallback`.
    public func over(_ fallback: RateLimitSettings) -> RateLimitSettings {
        var merged = self
        if merged.publisherKey == .inherit { merged.publisherKey = fallback.publisherKey }
        if merged.userPublishes == .inherit { merged.userPublishes = fallback.userPublishes }
        if merged.deviceToken == .inherit { merged.deviceToken = fallback.deviceToken }
        if merged.clientIP == .inherit { merged.clientIP = fallback.clientIP }
        return merged
    }
}

extension ConfigReader {
    static let rateLimitKeys = ["publisherKey", "userPublishes", "deviceToken", "clientIP"]

    mutating func readRateLimits(_ node: Node, at path: String) -> RateLimitSettings {
        var settings = RateLimitSettings()
        guard let entries = mapping(node, at: path, allowed: Self.rateLimitKeys) else { return settings }
        let fields: [(String, WritableKeyPath<RateLimitSettings, RateSetting>)] = [
            ("publisherKey", \.publisherKey), ("userPublishes", \.userPublishes), ("deviceToken", \.deviceToken),
            ("clientIP", \.clientIP),
        ]
        for (key, field) in fields {
            guard let node = entries[key], let text = string(node, at: "\(path).\(key)") else { continue }
            if let setting = Self.rate(text) {
                settings[keyPath: field] = setting
            } else {
                error(node, "'\(path).\(key)' must be a rate such as 100/s, 600/m or 5000/h (1 to 1000000), or off")
            }
        }
        return settings
    }

    /// `apps[].rateLimits` of every app that has them, by app ID.
    mutating func readAppRateLimits(_ node: Node) -> [String: RateLimitSettings] {
        var settings: [String: RateLimitSettings] = [:]
        for (index, item) in (node.sequence.map(Array.init) ?? []).enumerated() {
            guard let entries = item.mapping, let limits = entries["rateLimits"],
                let id = entries["id"]?.scalar?.string
            else { continue }
            settings[id] = readRateLimits(limits, at: "apps[\(index)].rateLimits")
        }
        return settings
    }

    static func rate(_ text: String) -> RateSetting? {
        if text == "off" { return .off }
        let parts = text.split(separator: "/")
        let periods: [Substring: Duration] = ["s": .seconds(1), "m": .seconds(60), "h": .seconds(3600)]
        guard parts.count == 2, let count = Int(parts[0]), (1...1_000_000).contains(count),
            let period = periods[parts[1]]
        else { return nil }
        return .limit(count: count, period: period)
    }
}
