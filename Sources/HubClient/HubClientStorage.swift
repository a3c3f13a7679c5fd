public import Foundation

/// Where a ``HubClient`` keeps what must survive a restart: the endpoint ID it generated once,
/// the last registered endpoint, and the feed position.
///
/// Keys are short strings the client scopes by app; values are small. Implementations must be
/// safe to call from any thread. Use ``FileHubClientStorage`` in apps and tools,
/// ``UserDefaultsHubClientStorage`` where UserDefaults is the natural home, and
/// ``InMemoryHubClientStorage`` in tests and previews.
public protocol HubClientStorage: Sendable {
    /// The value stored under `key`, or `nil`.
    func data(forKey key: String) -> Data?

    /// Stores `data` under `key`; `nil` removes the key.
    /// - Throws: when the value could not be saved.
    func setData(_ data: Data?, forKey key: String) throws
}

/// Keeps values in memory only: a restart forgets them. For tests and previews; share one instance
/// between two clients to simulate a restart.
public final class InMemoryHubClientStorage: HubClientStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    public init() {}

    public func data(forKey key: String) -> Data? {
        lock.withLock { values[key] }
    }

    public func setData(_ data: Data?, forKey key: String) {
        lock.withLock { values[key] = data }
    }
}

/// Keeps values in one JSON file, written atomically on every change (UserDefaults-like, and
/// available wherever Foundation is).
///
/// ```swift
/// let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
///                                           appropriateFor: nil, create: true)
/// let storage = FileHubClientStorage(url: support.appendingPathComponent("notification-hub.json"))
/// ```
///
/// One instance per file: two instances writing one file would overwrite each other's keys.
public final class FileHubClientStorage: HubClientStorage, @unchecked Sendable {
    /// The file the values live in (mode 0600); its folder is created (0700) on the first write.
    public let url: URL
    private let lock = NSLock()
    private var cache: [String: Data]?

    public init(url: URL) {
        self.url = url
    }

    public func data(forKey key: String) -> Data? {
        lock.withLock { loaded()[key] }
    }

    public func setData(_ data: Data?, forKey key: String) throws {
        try lock.withLock {
            var values = loaded()
            values[key] = data
            // Only the user may read it (endpoint IDs, feed positions): a folder it creates is
            // 0700, the file 0600.
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(values).write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
            cache = values
        }
    }

    /// The file's values; an unreadable or missing file counts as empty. Call with the lock held.
    private func loaded() -> [String: Data] {
        if let cache { return cache }
        let values =
            (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode([String: Data].self, from: $0) } ?? [:]
        cache = values
        return values
    }
}

/// Keeps values in `UserDefaults`, under keys prefixed with `NotificationHub.`.
///
/// The storage names a suite rather than holding a `UserDefaults` instance, so it is `Sendable`
/// on every platform; `nil` is the standard defaults.
public struct UserDefaultsHubClientStorage: HubClientStorage {
    /// The defaults suite, or `nil` for `UserDefaults.standard`.
    public let suiteName: String?

    public init(suiteName: String? = nil) {
        self.suiteName = suiteName
    }

    public func data(forKey key: String) -> Data? {
        defaults.data(forKey: "NotificationHub." + key)
    }

    public func setData(_ data: Data?, forKey key: String) {
        if let data {
            defaults.set(data, forKey: "NotificationHub." + key)
        } else {
            defaults.removeObject(forKey: "NotificationHub." + key)
        }
    }

    private var defaults: UserDefaults {
        suiteName.flatMap { UserDefaults(suiteName: $0) } ?? .standard
    }
}
