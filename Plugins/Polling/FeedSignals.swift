public import HubCore
import Synchronization

/// The waiting room of long-polls and event streams: every request waiting for a user's feed to
/// change waits here, with its deadline, until a wake-up or its deadline ends the wait. The hub
/// announces its committed changes to it (``FeedChangeListener``; pass it as the hub's `signals`),
/// the polling transport wakes endpoints through it, and the server parks its waiting requests
/// in it (``park(_:endpoint:after:timeout:_:)``: no task per waiting request).
///
/// Race-free use: take a ``ticket()`` *before* reading the feed; if the read found nothing,
/// ``wait(_:endpoint:after:timeout:)`` with that ticket returns at once when a wake-up came in
/// between. A waiter that names its (polling) endpoint is woken by wake-ups of that endpoint and
/// by ``Audience/everyone(except:)`` wake-ups that do not except it; a waiter without an endpoint
/// is woken by any change of the feed.
///
/// The hub also tells the signals which change versions it committed (``committed(_:version:)``),
/// so that a long-poll whose cursor is already at the newest version can wait without reading the
/// store first (``isCurrent(_:version:)``).
///
/// Costs: a wake-up costs the number of its own waiters; a wait costs no timer of its own (one
/// task sleeps until the earliest deadline of all waits: HubCore's `DeadlineReaper`). Memory is
/// bounded: the signals remember the feeds with a waiter, and of the others only the most recently
/// changed (two generations of `idleFeeds` feeds each, or of as many as have a waiter when more
/// do); a wait whose ticket is older than what they forgot returns woken at once (a read more,
/// never a wake-up lost), and ``isCurrent(_:version:)`` of a forgotten feed is `false`.
public final class FeedSignals: FeedChangeListener {
    /// Who a wake-up is for (``FeedAudience``).
    public typealias Audience = FeedAudience

    /// Carries wake-ups to other hub instances (a shared store's LISTEN/NOTIFY, for example).
    /// The receiving instance passes them to ``receive(_:_:)``.
    public typealias Relay = @Sendable (_ key: FeedKey, _ audience: Audience) -> Void

    /// How a waiter is resumed: a suspended task, or a callback of a request that waits without one.
    enum Resume {
        case continuation(CheckedContinuation<Bool, Never>)
        case callback(@Sendable (Bool) -> Void)
    }

    struct Waiter {
        let resume: Resume
        let deadline: ContinuousClock.Instant

        func callAsFunction(_ woken: Bool) {
            switch resume {
            case .continuation(let continuation): continuation.resume(returning: woken)
            case .callback(let callback): callback(woken)
            }
        }
    }

    /// A wait started by ``park(_:endpoint:after:timeout:_:)``, to end with ``unpark(_:)``.
    public struct Parking: Sendable {
        let id: UInt64
        let key: FeedKey
        let endpoint: String?
    }

    /// What the signals know of one feed.
    struct Feed {
        /// Waiting requests by the endpoint they wait for (`nil`: any change), then by waiter ID.
        var waiters: [String?: [UInt64: Waiter]] = [:]
        /// The clock of the last wake-up of the waiters without an endpoint.
        var feedWake: UInt64 = 0
        /// The clock of the last wake-up of each endpoint by name.
        var endpointWakes: [String: UInt64] = [:]
        /// The last ``Audience/everyone(except:)`` wake-up, whom it excepted, and the one before it
        /// (which counts for every endpoint: a conservative answer costs a read, never a wake-up).
        var everyoneWake: UInt64 = 0
        var everyoneExcept: String?
        var earlierEveryoneWake: UInt64 = 0
        /// The newest change version of the feed this instance knows was committed, if it knows.
        var latest: Int64?

        /// A feed the signals know nothing of since they forgot wake-ups up to `forgotten`: it
        /// counts as woken then, for every waiter (a conservative answer costs a read).
        init(forgotten: UInt64) {
            feedWake = forgotten
            everyoneWake = forgotten
            earlierEveryoneWake = forgotten
        }

        func woke(_ endpoint: String?, after ticket: UInt64) -> Bool {
            guard let endpoint else { return feedWake > ticket }
            if (endpointWakes[endpoint] ?? 0) > ticket || earlierEveryoneWake > ticket { return true }
            return everyoneWake > ticket && everyoneExcept != endpoint
        }

        var waiterCount: Int { waiters.values.reduce(0) { $0 + $1.count } }
    }

    struct State: DeadlineWaits {
        var clock: UInt64 = 0
        /// The feeds with waiters, and those woken, waited on or committed since the last
        /// rotation (``rotate(_:)``).
        var feeds: [FeedKey: Feed] = [:]
        /// The feeds of the generation before, none with a waiter; moved back into `feeds` when used.
        var previousFeeds: [FeedKey: Feed] = [:]
        /// `feeds` rotates when it grows past this.
        var rotateAt: Int
        /// The clock of the last rotation: every wake-up remembered in `previousFeeds` is at or before it.
        var rotatedAt: UInt64 = 0
        /// Every wake-up of a forgotten feed was at or before this clock.
        var forgotten: UInt64 = 0
        var waiterCount = 0
        var nextWaiter: UInt64 = 0
        /// The deadlines of the waits.
        var deadlines = DeadlineReaper<WaitID>()
        /// Set by ``shutDown()``: every wait returns at once.
        var isShutDown = false
        /// Counts ``forgetVersions()`` calls (wake-ups may have been missed each time).
        var epoch: UInt64 = 0

        /// What the signals know of the feed (a forgotten one counts as woken when it was forgotten).
        func known(_ key: FeedKey) -> Feed {
            feeds[key] ?? previousFeeds[key] ?? Feed(forgotten: forgotten)
        }

        /// Removes the feed to change it; the caller puts it back into `feeds`.
        mutating func take(_ key: FeedKey) -> Feed {
            feeds.removeValue(forKey: key) ?? previousFeeds.removeValue(forKey: key) ?? Feed(forgotten: forgotten)
        }

        func isWaiting(_ wait: WaitID) -> Bool { feeds[wait.key]?.waiters[wait.endpoint]?[wait.id] != nil }

        mutating func endWait(_ wait: WaitID) -> Waiter? {
            guard let waiter = feeds[wait.key]?.waiters[wait.endpoint]?.removeValue(forKey: wait.id) else { return nil }
            if feeds[wait.key]?.waiters[wait.endpoint]?.isEmpty == true {
                feeds[wait.key]?.waiters[wait.endpoint] = nil
            }
            waiterCount -= 1
            return waiter
        }

        func waitingDeadlines() -> [DeadlineHeap<WaitID>.Entry] {
            var live: [DeadlineHeap<WaitID>.Entry] = []
            live.reserveCapacity(waiterCount)
            for (key, feed) in feeds {
                for (endpoint, group) in feed.waiters {
                    for (id, waiter) in group {
                        live.append(.init(at: waiter.deadline, wait: WaitID(id: id, key: key, endpoint: endpoint)))
                    }
                }
            }
            return live
        }
    }

    /// Names a wait, to find it at its deadline.
    struct WaitID {
        let id: UInt64
        let key: FeedKey
        let endpoint: String?
    }

    let state: Mutex<State>
    /// The relay, in a struct: a closure stored directly in the generic `Mutex` was re-wrapped in
    /// two reabstraction thunks on every `withLock` (its `inout` access writes the value back), so
    /// after some 60,000 wake-ups calling it overflowed the stack.
    private struct RelayBox: Sendable {
        let send: Relay
    }
    private let relay = Mutex<RelayBox?>(nil)
    /// How many feeds without a waiter each generation remembers at most.
    let idleFeeds: Int

    /// The clock of the waits' deadlines (a test's manual clock ends them when advanced past them).
    public let clock: any HubClock

    /// Creates an empty waiting room that remembers 10,000 feeds nobody waits on per generation.
    /// - Parameter clock: the clock of the waits' deadlines.
    public convenience init(clock: any HubClock = SystemClock()) {
        self.init(clock: clock, idleFeeds: 10_000)
    }

    /// Creates an empty waiting room.
    /// - Parameters:
    ///   - clock: the clock of the waits' deadlines.
    ///   - idleFeeds: how many feeds nobody waits on each of the two generations remembers (their
    ///     latest wake-ups and versions). A wait whose ticket is older than a whole generation
    ///     returns woken at once, so it should hold many more feeds than change during a read.
    public init(clock: any HubClock, idleFeeds: Int) {
        self.clock = clock
        self.idleFeeds = max(1, idleFeeds)
        self.state = Mutex(State(rotateAt: max(1, idleFeeds)))
    }

    /// The current position of the wake-up clock.
    public func ticket() -> UInt64 { state.withLock { $0.clock } }

    // MARK: Waiting

    /// Waits for a wake-up of the feed (or of `endpoint` in it) after `ticket`, at most `timeout`.
    /// - Returns: `true` when woken, `false` on timeout or cancellation.
    public func wait(_ key: FeedKey, endpoint: String?, after ticket: UInt64, timeout: Duration) async -> Bool {
        let deadline = clock.now.advanced(by: timeout)
        let id = nextWaiterID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                enqueue(
                    Waiter(resume: .continuation(continuation), deadline: deadline), id: id, key: key,
                    endpoint: endpoint, after: ticket, cancelled: Task.isCancelled || timeout <= .zero)
            }
        } onCancel: {
            state.withLock { $0.endWait(WaitID(id: id, key: key, endpoint: endpoint)) }?.callAsFunction(false)
        }
    }

    /// Waits like ``wait(_:endpoint:after:timeout:)`` without a task: calls `resume` once, with
    /// `true` when woken and `false` at the deadline or on ``shutDown()``, from the thread that
    /// ended the wait (the waker's, or the deadline task's), so it should only hand the work on.
    /// A wake-up that came after `ticket` calls it with `true` before `park` returns.
    ///
    /// For a request parked in a connection's pipeline: it costs one waiter entry and the
    /// callback's context, where a waiting task costs its whole stack of async frames.
    /// - Returns: the wait, for ``unpark(_:)``.
    public func park(
        _ key: FeedKey, endpoint: String?, after ticket: UInt64, timeout: Duration,
        _ resume: @escaping @Sendable (Bool) -> Void
    ) -> Parking {
        let id = nextWaiterID()
        enqueue(
            Waiter(resume: .callback(resume), deadline: clock.now.advanced(by: timeout)), id: id, key: key,
            endpoint: endpoint, after: ticket, cancelled: timeout <= .zero)
        return Parking(id: id, key: key, endpoint: endpoint)
    }

    /// Ends a parked wait without calling its callback (its client went away, say).
    /// - Returns: `false` when the wait had already ended (its callback was or is being called).
    @discardableResult
    public func unpark(_ parking: Parking) -> Bool {
        state.withLock { $0.endWait(WaitID(id: parking.id, key: parking.key, endpoint: parking.endpoint)) != nil }
    }

    private func nextWaiterID() -> UInt64 {
        state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
    }

    /// Registers `waiter`, or resumes it at once: woken when a wake-up came after `ticket`, not
    /// woken when `cancelled` or shut down.
    private func enqueue(
        _ waiter: Waiter, id: UInt64, key: FeedKey, endpoint: String?, after ticket: UInt64, cancelled: Bool
    ) {
        let (immediate, sleeper) = state.withLock { state -> (Bool?, DeadlineSleeper?) in
            if state.known(key).woke(endpoint, after: ticket) { return (true, nil) }
            if cancelled || state.isShutDown { return (false, nil) }
            var feed = state.take(key)
            feed.waiters[endpoint, default: [:]][id] = waiter
            state.feeds[key] = feed
            state.waiterCount += 1
            return (nil, state.keepDeadline(WaitID(id: id, key: key, endpoint: endpoint), at: waiter.deadline))
        }
        if let immediate { waiter(immediate) }
        sleeper?.start(clock: clock) { [self] in reap($0, now: $1) }
    }

    /// Ends the waits whose deadline passed; when the reaper wakes next.
    private func reap(_ sleeper: DeadlineSleeper, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (expired, next) = state.withLock { $0.expireDeadlines(for: sleeper, now: now) }
        for waiter in expired { waiter(false) }
        return next
    }

    // MARK: Shutting down

    /// Ends every wait at once and makes every later wait return at once, both with `false`
    /// (not woken): for a server shutting down gracefully, so long-polls and event streams answer
    /// now instead of holding the shutdown for the rest of their wait. Idempotent; there is no way back.
    public func shutDown() {
        let waiters = state.withLock { state -> [Waiter] in
            guard !state.isShutDown else { return [] }
            state.isShutDown = true
            var waiters: [Waiter] = []
            waiters.reserveCapacity(state.waiterCount)
            for key in state.feeds.keys {
                guard let groups = state.feeds[key]?.waiters, !groups.isEmpty else { continue }
                for group in groups.values { waiters.append(contentsOf: group.values) }
                state.feeds[key]?.waiters = [:]
            }
            state.waiterCount = 0
            state.deadlines.removeAll()
            return waiters
        }
        for waiter in waiters { waiter(false) }
    }

    /// Whether ``shutDown()`` was called: waits return at once, not woken.
    public var isShutDown: Bool { state.withLock { $0.isShutDown } }

    // MARK: Waking

    /// Sends every local wake-up to `relay` as well, so waiters on other instances wake too.
    public func setRelay(_ relay: Relay?) { self.relay.withLock { $0 = relay.map(RelayBox.init) } }

    /// Wakes the waiters of a feed: without `endpoint`, those that wait for any change of the feed;
    /// with one, those that wait for that endpoint. The wake-up also goes to the relay, if any.
    public func wake(_ key: FeedKey, endpoint: String? = nil) {
        wake(key, endpoint.map(Audience.endpoint) ?? .feed)
    }

    /// Wakes the waiters of `audience` in the feed, here and (through the relay) on other instances.
    /// - Returns: how many waiting requests of this instance were woken.
    @discardableResult
    public func wake(_ key: FeedKey, _ audience: Audience) -> Int {
        let woken = wakeLocally(key, audience)
        relay.withLock { $0 }?.send(key, audience)
        return woken
    }

    /// A change the hub announces: wakes the waiters of `audience`, here and on other instances.
    /// - Returns: how many waiting requests of this instance were woken.
    @discardableResult
    public func announce(_ key: FeedKey, _ audience: FeedAudience) -> Int { wake(key, audience) }

    /// Wakes local waiters only (a stream ending, say); the relay is not told.
    public func wakeLocally(_ key: FeedKey, endpoint: String? = nil) {
        wakeLocally(key, endpoint.map(Audience.endpoint) ?? .feed)
    }

    /// A wake-up that came from another instance through the relay: wakes the local waiters of
    /// `audience` and forgets the feed's newest version (the other instance changed the feed).
    public func receive(_ key: FeedKey, _ audience: Audience) {
        wakeLocally(key, audience, forgetVersion: true)
    }

    @discardableResult
    private func wakeLocally(_ key: FeedKey, _ audience: Audience, forgetVersion: Bool = false) -> Int {
        let woken = state.withLock { state -> [Waiter] in
            state.clock += 1
            let clock = state.clock
            if state.feeds.count > state.rotateAt { rotate(&state) }
            var feed = state.take(key)
            defer { state.feeds[key] = feed }
            if forgetVersion { feed.latest = nil }
            var woken: [Waiter] = []
            switch audience {
            case .feed:
                feed.feedWake = clock
                woken = feed.waiters.removeValue(forKey: nil).map { Array($0.values) } ?? []
            case .endpoint(let endpoint):
                feed.endpointWakes[endpoint] = clock
                woken = feed.waiters.removeValue(forKey: endpoint).map { Array($0.values) } ?? []
            case .everyone(let except):
                feed.feedWake = clock
                feed.earlierEveryoneWake = feed.everyoneWake
                feed.everyoneWake = clock
                feed.everyoneExcept = except
                let kept = except.flatMap { feed.waiters.removeValue(forKey: $0) }
                for group in feed.waiters.values { woken.append(contentsOf: group.values) }
                feed.waiters = kept.map { [except: $0] } ?? [:]
            }
            state.waiterCount -= woken.count
            return woken
        }
        for waiter in woken { waiter(true) }
        return woken.count
    }

    /// Starts a generation: forgets the feeds of the one before (none has a waiter: a used feed
    /// moves back into `feeds`), and moves the current feeds without a waiter into it.
    func rotate(_ state: inout State) {
        if !state.previousFeeds.isEmpty { state.forgotten = state.rotatedAt }
        state.rotatedAt = state.clock
        var waited: [FeedKey: Feed] = [:]
        var idle: [FeedKey: Feed] = [:]
        idle.reserveCapacity(state.feeds.count)
        for (key, feed) in state.feeds {
            if feed.waiters.isEmpty { idle[key] = feed } else { waited[key] = feed }
        }
        state.previousFeeds = idle
        state.feeds = waited
        // Amortized: a rotation costs the feeds it sorts, and comes after at least as many new ones.
        state.rotateAt = waited.count + max(idleFeeds, waited.count)
    }
}
