import Synchronization

/// One of a ``Bells``' bells: a loop of the hub waits on it until something rings it.
package struct Bell: Hashable, Sendable {
    let name: String

    /// A bell called `name` (unique within its ``Bells``).
    package init(_ name: String) { self.name = name }
}

/// The wake-ups of the hub's own loops: the dispatcher's lanes (pokes, freed send slots), its
/// lease keeper and outcome recorder, the broadcast fan-out and the PostgreSQL relay's sender.
/// Long-polls and event streams do not wait here (they wait in the polling plugin's waiting room).
///
/// Race-free use, as with any doorbell: take a ``ticket()`` *before* looking for work; when there
/// is none, ``wait(_:after:timeout:)`` with that ticket returns at once if the bell rang in between.
///
/// Costs: a ring costs the waiters of its bell; the waits' deadlines cost one task in all, which
/// sleeps on the clock until the earliest one (a manual clock in tests sees one sleeper).
package final class Bells: Sendable {
    private struct Waiter {
        let bell: Bell
        let continuation: CheckedContinuation<Bool, Never>
        let deadline: ContinuousClock.Instant
    }

    private struct State {
        /// Counts rings; a ticket is its value when taken.
        var clock: UInt64 = 0
        /// When each bell last rang (the value of `clock` after that ring).
        var rung: [Bell: UInt64] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// The task that ends waits at their deadline: its generation and when it wakes.
        var reaper: (generation: UInt64, wakesAt: ContinuousClock.Instant)?
        var reaperGeneration: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The clock of the waits' deadlines.
    let clock: any HubClock

    package init(clock: any HubClock = SystemClock()) {
        self.clock = clock
    }

    /// The current position of the ring counter.
    package func ticket() -> UInt64 { state.withLock { $0.clock } }

    /// Wakes the waiters of `bell`; a wait with a ticket taken before this ring returns at once.
    package func ring(_ bell: Bell) {
        let woken = state.withLock { state -> [Waiter] in
            state.clock += 1
            state.rung[bell] = state.clock
            let ids = state.waiters.compactMap { $0.value.bell == bell ? $0.key : nil }
            return ids.compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in woken { waiter.continuation.resume(returning: true) }
    }

    /// Waits until `bell` rings after `ticket`, at most `timeout`.
    /// - Returns: `true` when rung, `false` on timeout or cancellation.
    package func wait(_ bell: Bell, after ticket: UInt64, timeout: Duration) async -> Bool {
        let deadline = clock.now.advanced(by: timeout)
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let cancelled = Task.isCancelled || timeout <= .zero
                let (immediate, reaper) = state.withLock { state -> (Bool?, UInt64?) in
                    if (state.rung[bell] ?? 0) > ticket { return (true, nil) }
                    if cancelled { return (false, nil) }
                    state.waiters[id] = Waiter(bell: bell, continuation: continuation, deadline: deadline)
                    if let reaper = state.reaper, reaper.wakesAt <= deadline { return (nil, nil) }
                    state.reaperGeneration += 1
                    state.reaper = (state.reaperGeneration, deadline)
                    return (nil, state.reaperGeneration)
                }
                if let immediate { continuation.resume(returning: immediate) }
                if let reaper { Task { await self.reap(generation: reaper, at: deadline) } }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }

    /// Ends the waits whose deadline passed, sleeping until the earliest deadline, until no wait
    /// is left or a reaper with an earlier deadline took over. (A scan per deadline: a hub's
    /// loops are a handful of waiters.)
    private func reap(generation: UInt64, at first: ContinuousClock.Instant) async {
        var wakesAt = first
        while true {
            try? await clock.sleep(until: wakesAt, tolerance: nil)
            let now = clock.now
            let (expired, next) = state.withLock { state -> ([Waiter], ContinuousClock.Instant?) in
                guard state.reaper?.generation == generation else { return ([], nil) }
                let due = state.waiters.compactMap { $0.value.deadline <= now ? $0.key : nil }
                let expired = due.compactMap { state.waiters.removeValue(forKey: $0) }
                guard let next = state.waiters.values.map(\.deadline).min() else {
                    state.reaper = nil
                    return (expired, nil)
                }
                state.reaper = (generation, next)
                return (expired, next)
            }
            for waiter in expired { waiter.continuation.resume(returning: false) }
            guard let next else { return }
            wakesAt = next
        }
    }

    /// How many loops wait on a bell now.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }
}
