public import HubCore
import Yams

/// The `dispatcher:` section: how this instance works the outbox (HubCore's
/// ``DispatcherConfiguration`` has the same defaults and says what each one does).
public struct DispatcherSettings: Sendable, Equatable {
    /// `concurrency`: sends in flight at once per transport lane; `nil` when not given (each
    /// transport's preference, else 256).
    public var concurrency: Int?
    /// `lanes.<transport>`: sends in flight at once for one transport's lane.
    public var lanes: [TransportID: Int] = [:]
    /// `lease`: how long a claim holds before another instance may take a delivery over.
    public var lease: Duration = DispatcherConfiguration().lease
    /// `maxAttempts`: attempts before a delivery is given up.
    public var maxAttempts: Int = DispatcherConfiguration().maxAttempts
    /// `maxAge`: age after which a delivery is given up, whatever its attempts.
    public var maxAge: Duration = DispatcherConfiguration().maxAge
    /// `userShare`: the most of a lane's slots one user's sends may hold (0 to 1).
    public var userShare: Double = DispatcherConfiguration().maxUserShare
    /// `hostShare`: the most of a lane's slots the sends to one destination host may hold (0 to 1).
    public var hostShare: Double = DispatcherConfiguration().maxHostShare
    /// `drainTimeout`: how long shutdown waits for sends in flight before cancelling them.
    public var drainTimeout: Duration = DispatcherConfiguration().shutdownDrainTimeout
    public init() {}

    /// `configuration` with these settings.
    public func applied(to configuration: DispatcherConfiguration) -> DispatcherConfiguration {
        var configuration = configuration
        configuration.concurrency = concurrency
        configuration.laneConcurrency = lanes
        configuration.lease = lease
        configuration.maxAttempts = maxAttempts
        configuration.maxAge = maxAge
        configuration.maxUserShare = userShare
        configuration.maxHostShare = hostShare
        configuration.shutdownDrainTimeout = drainTimeout
        return configuration
    }
}

extension ConfigReader {
    static let dispatcherKeys = [
        "concurrency", "lanes", "lease", "maxAttempts", "maxAge", "userShare", "hostShare", "drainTimeout",
    ]
    /// The most sends one lane keeps in flight.
    static let maxLaneConcurrency = 10_000

    mutating func readDispatcher(_ node: Node) -> DispatcherSettings {
        var settings = DispatcherSettings()
        let path = "dispatcher"
        guard let entries = mapping(node, at: path, allowed: Self.dispatcherKeys) else { return settings }
        let lanes = 1...Self.maxLaneConcurrency
        if let value = integer(entries["concurrency"], at: "\(path).concurrency", in: lanes) {
            settings.concurrency = value
        }
        if let node = entries["lanes"] {
            let known = plugins.map(\.id.rawValue)
            if let perLane = mapping(node, at: "\(path).lanes", allowed: known) {
                for (id, value) in perLane.values.sorted(by: { $0.key < $1.key }) {
                    guard let count = integer(value, at: "\(path).lanes.\(id)", in: lanes) else { continue }
                    settings.lanes[TransportID(id)] = count
                }
            }
        }
        if let value = duration(
            entries["lease"], at: "\(path).lease", in: .seconds(2) ... .seconds(300),
            mustBe: "from 2s to 5m (a lease is renewed every third of it)")
        {
            settings.lease = value
        }
        if let value = integer(entries["maxAttempts"], at: "\(path).maxAttempts", in: 1...100) {
            settings.maxAttempts = value
        }
        if let value = duration(
            entries["maxAge"], at: "\(path).maxAge", in: .seconds(60) ... .seconds(30 * 86_400),
            mustBe: "from 1m to 30d")
        {
            settings.maxAge = value
        }
        for (key, keyPath) in [("userShare", \DispatcherSettings.userShare), ("hostShare", \.hostShare)] {
            guard let node = entries[key], let text = string(node, at: "\(path).\(key)") else { continue }
            if let value = Double(text), value > 0, value <= 1 {
                settings[keyPath: keyPath] = value
            } else {
                error(node, "'\(path).\(key)' must be a fraction of the lane above 0 and at most 1, such as 0.25")
            }
        }
        if let value = duration(
            entries["drainTimeout"], at: "\(path).drainTimeout", in: .seconds(1) ... .seconds(300),
            mustBe: "from 1s to 5m")
        {
            settings.drainTimeout = value
        }
        return settings
    }
}
