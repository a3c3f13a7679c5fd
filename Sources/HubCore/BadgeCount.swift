/// The badge rule, once: which notifications an app icon's badge counts, and how a change of a
/// notification moves the per-user counters a store keeps with the feed.
///
/// A badge counts the user's notifications that are `active`, `unread` and not `dismissed`, of
/// those a device of its platform sees (the notification's `targetPolicy`). Stores keep one counter
/// per (app, user, scope), where a scope is a platform the notification targets, or
/// ``everyPlatform`` for one that targets every platform; the badge of a device is then the sum of
/// two counters (``everyPlatform`` and its platform): one read of at most two rows, no scan.
///
/// A store applies ``changes(from:to:)`` in the transaction that changes the notification (a
/// publish, a state change, a deletion, the sweep's release and expiry), and never restates the rule.
///
/// ```swift
/// let deltas = BadgeCount.changes(from: stored, to: updated)   // [BadgeDelta(scope: "ios", delta: -1)]
/// ```
public enum BadgeCount {
    /// The scope of the counter of notifications that target every platform.
    public static let everyPlatform = "*"

    /// Whether `notification` counts toward its user's badge: active, unread and not dismissed.
    public static func counts(_ notification: UserNotification) -> Bool {
        notification.status == .active && notification.readState == .unread
            && notification.userActionState != .dismissed
    }

    /// The counters a counted `notification` adds to: its targeted platforms, or ``everyPlatform``.
    public static func scopes(_ notification: UserNotification) -> [String] {
        let platforms = notification.targetPolicy.platformTypes
        guard !platforms.isEmpty else { return [everyPlatform] }
        var seen = Set<String>()
        return platforms.map(\.rawValue).filter { seen.insert($0).inserted }
    }

    /// The scopes whose counters make the badge of a device of `platform`.
    public static func scopes(for platform: Platform) -> [String] { [everyPlatform, platform.rawValue] }

    /// How the counters of `after`'s user move when a notification goes from `before` (`nil`: it
    /// did not exist) to `after`; empty when the badge does not change. Scopes are in a stable
    /// order (the order of ``scopes(_:)``, removals first).
    public static func changes(from before: UserNotification?, to after: UserNotification) -> [BadgeDelta] {
        var deltas: [(scope: String, delta: Int)] = []
        func add(_ scope: String, _ delta: Int) {
            if let index = deltas.firstIndex(where: { $0.scope == scope }) {
                deltas[index].delta += delta
            } else {
                deltas.append((scope, delta))
            }
        }
        if let before, counts(before) { for scope in scopes(before) { add(scope, -1) } }
        if counts(after) { for scope in scopes(after) { add(scope, 1) } }
        return deltas.filter { $0.delta != 0 }.map {
            BadgeDelta(appId: after.appId, userId: after.userId, scope: $0.scope, delta: $0.delta)
        }
    }

    /// `deltas` summed per counter (app, user, scope), in the order each counter first appears:
    /// one write per counter for a batch of changes.
    public static func merged(_ deltas: [BadgeDelta]) -> [BadgeDelta] {
        var order: [BadgeDelta] = []
        var index: [BadgeDelta.Counter: Int] = [:]
        for delta in deltas {
            if let at = index[delta.counter] {
                order[at].delta += delta.delta
            } else {
                index[delta.counter] = order.count
                order.append(delta)
            }
        }
        return order.filter { $0.delta != 0 }
    }

    /// The badge of a device from the counters of its scopes (``scopes(for:)``): their sum, never
    /// below zero.
    public static func badge(fromCounters counters: [Int]) -> Int { max(0, counters.reduce(0, +)) }
}

/// How one badge counter moves.
public struct BadgeDelta: Sendable, Hashable {
    /// The counter's key: app, user and scope.
    public struct Counter: Sendable, Hashable {
        /// The app.
        public var appId: String
        /// The user.
        public var userId: String
        /// A platform's raw value, or ``BadgeCount/everyPlatform``.
        public var scope: String
    }

    /// The app.
    public var appId: String
    /// The user.
    public var userId: String
    /// A platform's raw value, or ``BadgeCount/everyPlatform``.
    public var scope: String
    /// How much the counter moves (negative: down).
    public var delta: Int

    /// - Parameters:
    ///   - appId: the app.
    ///   - userId: the user.
    ///   - scope: a platform's raw value, or ``BadgeCount/everyPlatform``.
    ///   - delta: how much the counter moves.
    public init(appId: String, userId: String, scope: String, delta: Int) {
        self.appId = appId
        self.userId = userId
        self.scope = scope
        self.delta = delta
    }

    /// The counter it moves.
    public var counter: Counter { Counter(appId: appId, userId: userId, scope: scope) }
}

/// What an app's icon badge shows (hub.yaml `apps[].delivery.badge`).
public struct BadgeSource: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The user's unread, undismissed, active notifications that the device's platform sees
    /// (``BadgeCount``), sent with every push and updated on the user's other devices when a read
    /// or dismissal changes it.
    public static let unread = BadgeSource(rawValue: "unread")
    /// The values hub.yaml accepts.
    public static let known: [BadgeSource] = [.unread]
    public var description: String { rawValue }
}
