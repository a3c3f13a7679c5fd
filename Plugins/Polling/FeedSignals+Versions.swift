public import HubCore
import Synchronization

// The change versions this instance committed, so that a long-poll at the newest can wait without
// a read (the waiting room's state is in FeedSignals.swift).
extension FeedSignals {
    /// Records that this instance committed a change of the feed with `version` (`nil`: a change
    /// whose version it does not know, which makes ``isCurrent(_:version:)`` false until the next
    /// known one). Call before waking the feed's waiters for that change.
    public func committed(_ key: FeedKey, version: Int64?) {
        state.withLock { state in
            guard let version else {
                state.feeds[key]?.latest = nil
                state.previousFeeds[key]?.latest = nil
                return
            }
            if state.feeds.count > state.rotateAt { rotate(&state) }
            var feed = state.take(key)
            feed.latest = max(feed.latest ?? version, version)
            state.feeds[key] = feed
        }
    }

    /// Forgets every feed's newest version: for a relay that may have missed wake-ups of other
    /// instances (its connection was lost), so that the next long-polls read the store first.
    public func forgetVersions() {
        state.withLock { state in
            for key in state.feeds.keys { state.feeds[key]?.latest = nil }
            for key in state.previousFeeds.keys { state.previousFeeds[key]?.latest = nil }
            state.epoch += 1
        }
    }

    /// Changes whenever ``forgetVersions()`` is called: a waiter that saw no wake-up but finds
    /// a new epoch may have missed one (its relay was down), so it reads the store once.
    public var epoch: UInt64 { state.withLock { $0.epoch } }

    /// Whether `version` is at or past the newest change this instance knows the feed has, so a
    /// read from `version` would find nothing that a wake-up would not announce. `false` when it
    /// does not know (a feed not changed since start, or changed by another instance).
    public func isCurrent(_ key: FeedKey, version: Int64) -> Bool {
        state.withLock { state in state.known(key).latest.map { version >= $0 } ?? false }
    }

    /// How many feeds the signals remember (those with a waiter and, bounded, the recently
    /// changed ones), for metrics and tests.
    public var feedCount: Int { state.withLock { $0.feeds.count + $0.previousFeeds.count } }

    /// How many requests are waiting, for metrics.
    public var waiterCount: Int { state.withLock { $0.waiterCount } }
}
