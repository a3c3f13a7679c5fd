public import HubCore
import Yams

/// The `broadcasts:` section: how this instance expands broadcasts (HubCore's
/// ``BroadcastConfiguration`` has the same defaults and says what each one does).
public struct BroadcastSettings: Sendable, Equatable {
    /// `enabled`: whether this instance leases and publishes broadcast chunks.
    public var enabled: Bool = BroadcastConfiguration().enabled
    /// `chunkSize`: users per chunk (what a killed instance publishes twice at most).
    public var chunkSize: Int = BroadcastConfiguration().chunkSize
    /// `usersPerWrite`: users a chunk publishes per write (a single publish waits for one such
    /// write at most).
    public var usersPerWrite: Int = BroadcastConfiguration().usersPerWrite
    /// `lease`: how long a chunk stays leased to its instance before another takes it over.
    public var lease: Duration = BroadcastConfiguration().lease
    /// `pollInterval`: how often an idle expander looks for broadcasts created elsewhere.
    public var pollInterval: Duration = BroadcastConfiguration().pollInterval
    /// `concurrentChunks`: chunks this instance publishes at once.
    public var concurrentChunks: Int = BroadcastConfiguration().concurrentChunks
    /// `maxUsersPerSecond`: the most users a second this instance publishes; `nil`: the pace of
    /// delivery.
    public var maxUsersPerSecond: Int? = BroadcastConfiguration().maxUsersPerSecond
    public init() {}

    /// `configuration` with these settings.
    public func applied(to configuration: BroadcastConfiguration) -> BroadcastConfiguration {
        var configuration = configuration
        configuration.enabled = enabled
        configuration.chunkSize = chunkSize
        configuration.usersPerWrite = usersPerWrite
        configuration.lease = lease
        configuration.pollInterval = pollInterval
        configuration.concurrentChunks = concurrentChunks
        configuration.maxUsersPerSecond = maxUsersPerSecond
        return configuration
    }
}

extension ConfigReader {
    static let broadcastKeys = [
        "enabled", "chunkSize", "usersPerWrite", "lease", "pollInterval", "concurrentChunks", "maxUsersPerSecond",
    ]
    /// The largest chunk: a chunk is published as one batch, whose limit is 1,000 items.
    static let maxBroadcastChunk = 1_000

    mutating func readBroadcasts(_ node: Node) -> BroadcastSettings {
        var settings = BroadcastSettings()
        let path = "broadcasts"
        guard let entries = mapping(node, at: path, allowed: Self.broadcastKeys) else { return settings }
        if let value = choice(entries["enabled"], at: "\(path).enabled", ["true", "false"]) {
            settings.enabled = value == "true"
        }
        if let value = integer(entries["chunkSize"], at: "\(path).chunkSize", in: 1...Self.maxBroadcastChunk) {
            settings.chunkSize = value
        }
        if let value = integer(entries["usersPerWrite"], at: "\(path).usersPerWrite", in: 1...Self.maxBroadcastChunk) {
            settings.usersPerWrite = value
        }
        if let value = duration(
            entries["lease"], at: "\(path).lease", in: .seconds(5) ... .seconds(3600),
            mustBe: "from 5s to 1h (longer than publishing one chunk takes)")
        {
            settings.lease = value
        }
        if let value = duration(
            entries["pollInterval"], at: "\(path).pollInterval", in: .seconds(1) ... .seconds(60),
            mustBe: "from 1s to 1m")
        {
            settings.pollInterval = value
        }
        if let value = integer(entries["concurrentChunks"], at: "\(path).concurrentChunks", in: 1...16) {
            settings.concurrentChunks = value
        }
        if let value = integer(entries["maxUsersPerSecond"], at: "\(path).maxUsersPerSecond", in: 1...10_000_000) {
            settings.maxUsersPerSecond = value
        }
        return settings
    }
}
