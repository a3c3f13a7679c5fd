import Synchronization

/// Wakes long-poll and server-sent-event requests waiting for a user's feed to change.
///
/// Race-free use: take a ``ticket()`` *before* reading the feed; if the read found nothing,
/// ``wait(_:endpoint:after:timeout:)`` with that ticket returns at once when a wake-up came in
/// between. A waiter that names its (polling) endpoint is woken only by wake-ups of that endpoint:
/// the hub wakes each polling endpoint after a committed change it did not make itself; a waiter
/// without an endpoint is woken by any committed change of the feed.
public final class FeedSignals: Sendable {
    private struct Target: Hashable {
        let key: FeedKey
        let endpoint: String?
    }

    private struct State {
        var clock: UInt64 = 0
        var lastWake: [Target: UInt64] = [:]
        /// `lastWake` is pruned when it grows past this (amortized: at least doubles in between).
        var pruneAt = 10_000
        /// Waiters by what they wait for, so a wake-up costs the number of its own waiters, not
        /// of every request waiting on the hub.
        var waiters: [Target: [UInt64: CheckedContinuation<Bool, Never>]] = [:]
        var waiterCount = 0
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The relay, in a struct: a closure stored directly in the generic `Mutex` was re-wrapped in
    /// two reabstraction thunks on every `withLock` (its `inout` access writes the value back), so
    /// after some 60,000 wake-ups calling it overflowed the stack.
    private struct RelayBox: Sendable {
        let send: Relay
    }
    private let relay = Mutex<RelayBox?>(nil)

    /// Carries wake-ups to other hub instances (a shared store's LISTEN/NOTIFY, for example).
    public typealias Relay = @Sendable (_ key: FeedKey, _ endpoint: String?) -> Void
    /// Wake-ups older than this many ticks are forgotten (long-polls last at most a minute).
    private let memory: UInt64 = 100_000

    public init() {}

    /// The current position of the wake-up clock.
    public func ticket() -> UInt64 { state.withLock { $0.clock } }

    /// Waits for a wake-up of the feed (or of `endpoint` in it) after `ticket`, at most `timeout`.
    /// - Returns: `true` when woken, `false` on timeout or cancellation.
    public func wait(_ key: FeedKey, endpoint: String?, after ticket: UInt64, timeout: Duration) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let target = Target(key: key, endpoint: endpoint)
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.suspend(id: id, target: target, ticket: ticket) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func suspend(id: UInt64, target: Target, ticket: UInt64) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { state -> Bool? in
                    if (state.lastWake[target] ?? 0) > ticket { return true }
                    if Task.isCancelled { return false }
                    state.waiters[target, default: [:]][id] = continuation
                    state.waiterCount += 1
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let waiter = state.waiters[target]?.removeValue(forKey: id) else { return nil }
                if state.waiters[target]?.isEmpty == true { state.waiters[target] = nil }
                state.waiterCount -= 1
                return waiter
            }
            waiter?.resume(returning: false)
        }
    }

    /// Sends every local wake-up to `relay` as well, so waiters on other instances wake too.
    public func setRelay(_ relay: Relay?) { self.relay.withLock { $0 = relay.map(RelayBox.init) } }

    /// Wakes the waiters of a feed: without `endpoint`, those that wait for any change of the feed;
    /// with one, those that wait for that endpoint. The wake-up also goes to the relay, if any.
    public func wake(_ key: FeedKey, endpoint: String? = nil) {
        wakeLocally(key, endpoint: endpoint)
        relay.withLock { $0 }?.send(key, endpoint)
    }

    /// Wakes local waiters only: for wake-ups that arrive from another instance through the relay.
    public func wakeLocally(_ key: FeedKey, endpoint: String? = nil) {
        let target = Target(key: key, endpoint: endpoint)
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.clock += 1
            state.lastWake[target] = state.clock
            if state.lastWake.count > state.pruneAt {
                let horizon = state.clock > memory ? state.clock - memory : 0
                state.lastWake = state.lastWake.filter { $0.value > horizon }
                state.pruneAt = max(10_000, state.lastWake.count * 2)
            }
            guard let woken = state.waiters.removeValue(forKey: target) else { return [] }
            state.waiterCount -= woken.count
            return Array(woken.values)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// How many requests are waiting, for metrics.
    public var waiterCount: Int { state.withLock { $0.waiterCount } }
}
