import Synchronization

/// Wakes long-poll and server-sent-event requests waiting for a user's feed to change.
///
/// Race-free use: take a ``ticket()`` *before* reading the feed; if the read found nothing,
/// ``wait(_:endpoint:after:timeout:)`` with that ticket returns at once when a wake-up came in
/// between. A waiter that names its endpoint is woken only by a delivery to that endpoint (the
/// polling transport), so the endpoint that made a change is not woken by it; a waiter without an
/// endpoint is woken by any committed change of the feed.
public final class FeedSignals: Sendable {
    private struct Target: Hashable {
        let key: FeedKey
        let endpoint: String?
    }

    private struct Waiter {
        let target: Target
        let ticket: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var clock: UInt64 = 0
        var lastWake: [Target: UInt64] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())
    private let relay = Mutex<Relay?>(nil)

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
                    state.waiters[id] = Waiter(target: target, ticket: ticket, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Sends every local wake-up to `relay` as well, so waiters on other instances wake too.
    public func setRelay(_ relay: Relay?) { self.relay.withLock { $0 = relay } }

    /// Wakes the waiters of a feed: without `endpoint`, those that wait for any change of the feed;
    /// with one, those that wait for that endpoint. The wake-up also goes to the relay, if any.
    public func wake(_ key: FeedKey, endpoint: String? = nil) {
        wakeLocally(key, endpoint: endpoint)
        relay.withLock { $0 }?(key, endpoint)
    }

    /// Wakes local waiters only: for wake-ups that arrive from another instance through the relay.
    public func wakeLocally(_ key: FeedKey, endpoint: String? = nil) {
        let target = Target(key: key, endpoint: endpoint)
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.clock += 1
            state.lastWake[target] = state.clock
            if state.lastWake.count > 10_000 {
                let horizon = state.clock > memory ? state.clock - memory : 0
                state.lastWake = state.lastWake.filter { $0.value > horizon }
            }
            let ids = state.waiters.compactMap { $0.value.target == target ? $0.key : nil }
            return ids.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// How many requests are waiting, for metrics.
    public var waiterCount: Int { state.withLock { $0.waiters.count } }
}
