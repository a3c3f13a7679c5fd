/// The deadlines of a waiting room's waits and the one task that ends them: ``Bells`` (the hub's
/// loops) and the polling plugin's FeedSignals (long-polls and event streams) keep one each, in
/// the state their lock guards (``DeadlineWaits``).
///
/// Costs: a deadline costs an entry in a binary min-heap (`O(log n)` to add), no timer of its
/// own: one task (a ``DeadlineSleeper``) sleeps on the clock until the earliest deadline of a
/// wait still waiting (a manual clock in tests sees one sleeper). A wait that ends otherwise
/// (woken, cancelled) leaves its deadline behind, stale: the sleeper drops stale deadlines from
/// the front when it wakes, so it wakes for live ones, and the heap is rebuilt from the live
/// waits when stale entries outnumber them.
package struct DeadlineReaper<Wait> {
    fileprivate var heap = DeadlineHeap<Wait>()
    /// The sleeper that ends the waits due, if one sleeps.
    fileprivate var sleeping: DeadlineSleeper?
    fileprivate var generation: UInt64 = 0

    /// No deadline kept.
    package init() {}

    /// How many deadlines are kept, stale ones included.
    package var count: Int { heap.count }

    /// Forgets every deadline; a sleeping task stops when it wakes (a waiting room shut down).
    package mutating func removeAll() {
        heap = DeadlineHeap()
        sleeping = nil
    }
}

/// The task that ends a waiting room's waits at their deadlines (one sleeps at a time: a wait
/// whose deadline comes before it wakes starts another, and the earlier one stops when it wakes).
package struct DeadlineSleeper: Sendable {
    fileprivate let generation: UInt64
    /// When it wakes first.
    package let wakesAt: ContinuousClock.Instant

    /// Starts the task: it sleeps on `clock` until ``wakesAt``, then calls `sweep` with this
    /// sleeper and the time, which ends the waits due (``DeadlineWaits/expireDeadlines(for:now:)``
    /// under the waiting room's lock) and returns when to wake next, or `nil` to stop.
    package func start(
        clock: any HubClock,
        sweep: @escaping @Sendable (DeadlineSleeper, ContinuousClock.Instant) -> ContinuousClock.Instant?
    ) {
        Task {
            var wakesAt = self.wakesAt
            while true {
                try? await clock.sleep(until: wakesAt, tolerance: nil)
                guard let next = sweep(self, clock.now) else { return }
                wakesAt = next
            }
        }
    }
}

/// The state of a waiting room, guarded by its lock, whose waits end at their deadlines through
/// the ``DeadlineReaper`` it holds.
package protocol DeadlineWaits {
    /// What names a wait, to find it again (its ID, say).
    associatedtype Wait
    /// A wait that its deadline ended, to be resumed (not woken) outside the lock.
    associatedtype Ended

    /// The waits' deadlines.
    var deadlines: DeadlineReaper<Wait> { get set }
    /// How many waits are waiting.
    var waiterCount: Int { get }
    /// Whether `wait` is still waiting (not woken, cancelled or ended).
    func isWaiting(_ wait: Wait) -> Bool
    /// Ends `wait`, whose deadline passed: removes it and returns it, or `nil` if it had ended.
    mutating func endWait(_ wait: Wait) -> Ended?
    /// The deadlines of the waits that are waiting.
    func waitingDeadlines() -> [DeadlineHeap<Wait>.Entry]
}

extension DeadlineWaits {
    /// At most this many stale deadlines are dropped from the front at one wake-up, so the
    /// lock is not held long after many waits were woken at once (a broadcast).
    private var maxStaleDropped: Int { 256 }

    /// Keeps the deadline of `wait`, which starts waiting.
    /// - Returns: a sleeper to start (``DeadlineSleeper/start(clock:sweep:)``, outside the
    ///   lock) when none wakes by `deadline`.
    package mutating func keepDeadline(_ wait: Wait, at deadline: ContinuousClock.Instant) -> DeadlineSleeper? {
        deadlines.heap.push(DeadlineHeap.Entry(at: deadline, wait: wait))
        compactDeadlines()
        if let sleeping = deadlines.sleeping, sleeping.wakesAt <= deadline { return nil }
        deadlines.generation += 1
        let sleeper = DeadlineSleeper(generation: deadlines.generation, wakesAt: deadline)
        deadlines.sleeping = sleeper
        return sleeper
    }

    /// For `sleeper`, woken at `now`: ends the waits whose deadline passed.
    /// - Returns: the waits ended, to resume outside the lock, and when `sleeper` wakes next
    ///   (`nil`: it stops, as no wait is left or a sleeper with an earlier deadline took over).
    package mutating func expireDeadlines(
        for sleeper: DeadlineSleeper, now: ContinuousClock.Instant
    ) -> (ended: [Ended], next: ContinuousClock.Instant?) {
        guard deadlines.sleeping?.generation == sleeper.generation else { return ([], nil) }
        var ended: [Ended] = []
        var dropped = 0
        while let first = deadlines.heap.first {
            if first.at <= now {
                deadlines.heap.removeFirst()
                if let wait = endWait(first.wait) { ended.append(wait) }
            } else if dropped < maxStaleDropped, !isWaiting(first.wait) {
                deadlines.heap.removeFirst()
                dropped += 1
            } else {
                break
            }
        }
        compactDeadlines()
        guard let next = deadlines.heap.first?.at else {
            deadlines.sleeping = nil
            return (ended, nil)
        }
        deadlines.sleeping = DeadlineSleeper(generation: sleeper.generation, wakesAt: next)
        return (ended, next)
    }

    /// Rebuilds the heap from the live waits when stale deadlines outnumber them (amortized: the
    /// heap at least halves).
    private mutating func compactDeadlines() {
        if deadlines.heap.count > 2 * waiterCount + 1024 { deadlines.heap = DeadlineHeap(entries: waitingDeadlines()) }
    }
}

/// Deadlines of waits, earliest first: a binary min-heap.
package struct DeadlineHeap<Wait> {
    /// A wait's deadline.
    package struct Entry {
        package let at: ContinuousClock.Instant
        package let wait: Wait

        /// The deadline `at` of `wait`.
        package init(at: ContinuousClock.Instant, wait: Wait) {
            self.at = at
            self.wait = wait
        }
    }

    private var entries: [Entry] = []

    /// An empty heap.
    package init() {}

    /// A heap of `entries` in any order.
    package init(entries: [Entry]) {
        self.entries = entries.sorted { $0.at < $1.at }  // a sorted array is a valid min-heap
    }

    /// The earliest entry.
    package var first: Entry? { entries.first }
    package var count: Int { entries.count }

    package mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the earliest entry (none when empty).
    package mutating func removeFirst() {
        guard entries.count > 1 else {
            entries.removeAll(keepingCapacity: true)
            return
        }
        entries[0] = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].at < entries[smallest].at { smallest = left }
            if right < entries.count && entries[right].at < entries[smallest].at { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
