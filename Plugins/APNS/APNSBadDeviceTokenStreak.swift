import Synchronization

/// The distinct device tokens answered `BadDeviceToken` by one server for one set of credentials
/// since the last accepted push: many in a row say the environment is wrong, not the tokens.
final class APNSBadDeviceTokenStreak: Sendable {
    /// At most as many tokens as the threshold they are counted against.
    private let tokens = Mutex<Set<String>>([])
    /// Whether there are any (read on every accepted push without the lock).
    private let isRunning = Atomic<Bool>(false)

    /// Counts `token` in the streak (the same token again does not count: several deliveries to
    /// one dead token say nothing about the others).
    /// - Returns: the distinct tokens of the streak, at most `limit`, and whether this answer made
    ///   the count reach `limit`.
    func record(_ token: String, limit: Int) -> (count: Int, reachedLimit: Bool) {
        isRunning.store(true, ordering: .relaxed)
        return tokens.withLock { tokens in
            guard tokens.count < limit else { return (tokens.count, false) }
            let inserted = tokens.insert(token).inserted
            return (tokens.count, inserted && tokens.count == limit)
        }
    }

    /// Ends the streak: APNs accepted a push.
    func end() {
        guard isRunning.load(ordering: .relaxed) else { return }
        isRunning.store(false, ordering: .relaxed)
        tokens.withLock { $0.removeAll() }
    }
}
