/// Whose waiting requests a committed change of a feed is for.
public enum FeedAudience: Hashable, Sendable {
    /// The requests without an endpoint (they wait for any change of the feed).
    case feed
    /// The requests of one polling endpoint.
    case endpoint(String)
    /// Every request of the feed: those without an endpoint and those of every endpoint but
    /// `except` (the endpoint that made the change). The announcement of a committed change.
    case everyone(except: String?)
}

/// Hears the changes of users' feeds the hub commits. The hub announces each change here and
/// knows nothing about who waits for it: the polling plugin's waiting room (`FeedSignals`, in
/// HubPolling) wakes the long-polls and event streams that wait for the feed, and a shared store
/// relays the announcements to other instances.
public protocol FeedChangeListener: Sendable {
    /// The hub committed a change of the feed with change `version` (`nil`: one or more changes
    /// whose newest version it does not know). Called before ``announce(_:_:)`` for that change.
    func committed(_ key: FeedKey, version: Int64?)

    /// Someone waiting for the feed should read it: `audience` says who.
    /// - Returns: how many waiting requests of this instance the announcement woke (for metrics).
    @discardableResult
    func announce(_ key: FeedKey, _ audience: FeedAudience) -> Int
}

/// The listener of a hub that nobody waits on: announcements go nowhere.
public struct NoFeedChangeListener: FeedChangeListener {
    public init() {}

    public func committed(_ key: FeedKey, version: Int64?) {}

    public func announce(_ key: FeedKey, _ audience: FeedAudience) -> Int { 0 }
}
