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
/// Costs: a ring costs a look at every waiter (a hub's loops are a handful); the waits' deadlines
/// cost one task in all, which sleeps on the clock until the earliest one (``DeadlineReaper``; a
/// manual clock in tests sees one sleeper).
package final class Bells: Sendable {
    private struct Waiter {
        let bell: Bell
        let continuation: CheckedContinuation<Bool, Never>
        let deadline: ContinuousClock.Instant
    }

    private struct State: DeadlineWaits {
        /// Counts rings; a ticket is its value when taken.
        var clock: UInt64 = 0
        /// When each bell last rang (the value of `clock` after that ring).
        var rung: [Bell: UInt64] = [:]
        /// The waits by ID.
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// The waits' deadlines, by wait ID.
        var deadlines = DeadlineReaper<UInt64>()

        var waiterCount: Int { waiters.count }

        func isWaiting(_ id: UInt64) -> Bool { waiters[id] != nil }

        mutating func endWait(_ id: UInt64) -> Waiter? { waiters.removeValue(forKey: id) }

        func waitingDeadlines() -> [DeadlineHeap<UInt64>.Entry] {
            waiters.map { DeadlineHeap.Entry(at: $0.value.deadline, wait: $0.key) }
        }
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
                let (immediate, sleeper) = state.withLock { state -> (Bool?, DeadlineSleeper?) in
                    if (state.rung[bell] ?? 0) > ticket { return (true, nil) }
                    if cancelled { return (false, nil) }
                    state.waiters[id] = Waiter(bell: bell, continuation: continuation, deadline: deadline)
                    return (nil, state.keepDeadline(id, at: deadline))
                }
                if let immediate { continuation.resume(returning: immediate) }
                sleeper?.start(clock: clock) { [self] in reap($0, now: $1) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }

    /// Ends the waits whose deadline passed; when the reaper wakes next.
    private func reap(_ sleeper: DeadlineSleeper, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (expired, next) = state.withLock { $0.expireDeadlines(for: sleeper, now: now) }
        for waiter in expired { waiter.continuation.resume(returning: false) }
        return next
    }

    /// How many loops wait on a bell now.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }
}
