import Synchronization

/// A call that did not finish within its deadline.
public struct DeadlineExceeded: Error, Sendable, CustomStringConvertible {
    /// What was called, e.g. `store.claimDeliveries`.
    public var operation: String
    public var timeout: Duration
    public var description: String { "\(operation) did not answer within \(timeout)" }
}

/// Runs `operation` and returns its result, or throws ``DeadlineExceeded`` once `timeout` has
/// passed, whichever comes first.
///
/// Unlike a task group, this returns at the deadline even when `operation` ignores cancellation
/// (a query on a connection whose server vanished): the operation is cancelled and left to
/// finish on its own. Cancelling the caller cancels the operation too. Deadlines are kept by one
/// shared watchdog (not a timer per call), so a deadline may fire up to 50 ms late. The
/// operation runs with ``DeadlineHold/current`` set: while it holds the deadline off (a commit
/// on its way), a deadline that passes waits for the hold's end or the operation's result.
public func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(timeout, operation, watchdog: .shared, body)
}

/// ``withDeadline(_:_:_:)`` on `watchdog`'s clock (tests keep deadlines on a manual one).
package func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: String, watchdog: DeadlineWatchdog,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.begin(continuation)
            let work = Task {
                let result = await DeadlineHold.$current.withValue(DeadlineHold(race)) {
                    await Result(awaiting: body)
                }
                race.finish(result)
            }
            let watch = watchdog.watch(until: watchdog.clock.now + timeout) {
                if race.expire(DeadlineExceeded(operation: operation, timeout: timeout)) { work.cancel() }
            }
            race.onFinish {
                work.cancel()
                watchdog.forget(watch)
            }
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// Keeps the deadlines of every ``withDeadline(_:_:_:)`` call in flight with one task that runs
/// only while some are: it wakes at the earliest deadline, or every ``granularity``, and expires
/// what is due. A timer task per call cost two task switches and a timer per store call.
package final class DeadlineWatchdog: Sendable {
    /// The system clock's.
    static let shared = DeadlineWatchdog(clock: SystemClock())
    /// The longest the watchdog sleeps while deadlines are kept (a deadline set meanwhile for
    /// earlier than its wake-up fires at most this late).
    static let granularity: Duration = .milliseconds(50)

    private struct Watch {
        let deadline: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }

    private struct State {
        var watches: [UInt64: Watch] = [:]
        var nextID: UInt64 = 0
        var running = false
    }

    private let state = Mutex(State())
    let clock: any HubClock

    package init(clock: any HubClock) { self.clock = clock }

    /// Calls `expire` once `deadline` has passed, unless ``forget(_:)`` is called first.
    func watch(until deadline: ContinuousClock.Instant, _ expire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, start) = state.withLock { state -> (UInt64, Bool) in
            state.nextID &+= 1
            state.watches[state.nextID] = Watch(deadline: deadline, expire: expire)
            defer { state.running = true }
            return (state.nextID, !state.running)
        }
        if start { Task.detached { await self.run() } }
        return id
    }

    func forget(_ id: UInt64) { _ = state.withLock { $0.watches.removeValue(forKey: id) } }

    /// Watches in flight (tests).
    package var count: Int { state.withLock { $0.watches.count } }

    private func run() async {
        while true {
            let now = clock.now
            let (expired, earliest) = state.withLock { state -> ([Watch], ContinuousClock.Instant?) in
                var expired: [Watch] = []
                var earliest: ContinuousClock.Instant?
                for (id, watch) in state.watches {
                    if watch.deadline <= now {
                        expired.append(watch)
                        state.watches[id] = nil
                    } else if earliest.map({ watch.deadline < $0 }) ?? true {
                        earliest = watch.deadline
                    }
                }
                if state.watches.isEmpty { state.running = false }
                return (expired, earliest)
            }
            for watch in expired { watch.expire() }
            guard let earliest else { return }
            try? await clock.sleep(until: min(earliest, now + Self.granularity), tolerance: nil)
        }
    }
}

/// What a ``withDeadline(_:_:_:)`` call lets its operation do about the deadline: hold it off
/// while the operation makes its outcome final, so that a caller answered "did not answer in
/// time" can rely on it not having happened.
///
/// A store's transaction takes ``current`` before it sends `COMMIT`: when ``hold()`` fails the
/// caller has already been answered (the deadline passed, or the caller went away), so the store
/// rolls back instead of committing what nobody will hear of; when it succeeds, a deadline
/// passing during the commit waits for the commit's answer, which then answers the caller (the
/// store's own statement deadline bounds that wait). Holding covers the innermost
/// ``withDeadline(_:_:_:)`` only; cancelling the caller ends the call even while held.
public struct DeadlineHold: Sendable {
    /// The hold of the deadline the current task runs under: set for the operation of a
    /// ``withDeadline(_:_:_:)`` call (and the tasks it creates); `nil` outside of one.
    @TaskLocal public static var current: DeadlineHold?

    private let races: [any DeadlineHoldable]

    init(_ race: any DeadlineHoldable) { races = [race] }

    /// One hold over all of `holds` (several callers' work done in one transaction): it holds
    /// only when every one of them does.
    /// - Parameter holds: the holds of the callers whose work is done together.
    public init(combining holds: [DeadlineHold]) { races = holds.flatMap(\.races) }

    /// Holds the deadline off until ``release()``: a deadline that passes meanwhile no longer
    /// answers the caller by itself; the operation's result does (or ``release()``, after which
    /// the deadline answers at once).
    /// - Returns: `false`, holding nothing, when the call has already ended (its deadline passed
    ///   or its caller was cancelled): what the operation does now reaches nobody.
    public func hold() -> Bool {
        for (index, race) in races.enumerated() where !race.hold() {
            for held in races[..<index] { held.release() }
            return false
        }
        return true
    }

    /// Ends the hold: a deadline that passed while held answers the caller now.
    public func release() {
        for race in races { race.release() }
    }

    /// Whether the call has ended (its caller was answered by its deadline or its cancellation,
    /// or by the operation's result); with ``init(combining:)``, whether any of them has.
    public var hasEnded: Bool { races.contains { $0.hasEnded } }
}

/// What a store's write ends with when ``DeadlineHold/hold()`` found its caller already
/// answered (its deadline passed, or it went away) before the write was made final: the write is
/// not stored (rolled back, or never run). Not a `HubError`: it never reaches a caller, and it
/// says nothing about the store's health.
package struct CallerAlreadyAnswered: Error, CustomStringConvertible {
    package init() {}
    package var description: String {
        "the caller's deadline passed before its write was made final; the write was not stored"
    }
}

/// A deadline race seen without its result type.
protocol DeadlineHoldable: Sendable {
    func hold() -> Bool
    func release()
    var hasEnded: Bool { get }
}

/// The first of work, timer and cancellation to finish resumes the caller; the others are ignored.
/// While held (``DeadlineHold``), the timer waits for the work or the release.
private final class DeadlineRace<T: Sendable>: DeadlineHoldable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var pending: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
        var held = false
        /// The deadline's error, when it passed while held.
        var expiredWhileHeld: (any Error)?
    }
    private let state = Mutex(State())

    func hold() -> Bool {
        state.withLock { state in
            guard !state.done else { return false }
            state.held = true
            return true
        }
    }

    func release() {
        resume(
            state.withLock { state -> Decision? in
                state.held = false
                guard let expired = state.expiredWhileHeld else { return nil }
                state.expiredWhileHeld = nil
                return Self.decide(&state, .failure(expired))
            })
    }

    var hasEnded: Bool { state.withLock { $0.done } }

    /// The deadline passed: decides the race with `error` unless it is decided or held (then the
    /// release decides it). Returns whether it did.
    func expire(_ error: any Error) -> Bool {
        resume(
            state.withLock { state -> Decision? in
                guard !state.held else {
                    if !state.done { state.expiredWhileHeld = error }
                    return nil
                }
                return Self.decide(&state, .failure(error))
            })
    }

    func begin(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let pending = state.pending { return pending }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Registers what to cancel once the race is decided (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let decided = state.withLock { state -> Bool in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if decided { cleanup() }
    }

    /// Decides the race with `result` unless it is decided already. Returns whether it did.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        resume(state.withLock { state in Self.decide(&state, result) })
    }

    /// What deciding the race with `result` leaves to do outside the lock (`nil`: it was decided).
    private struct Decision {
        let continuation: CheckedContinuation<T, any Error>?
        let cleanup: (@Sendable () -> Void)?
        let result: Result<T, any Error>
    }

    private static func decide(_ state: inout State, _ result: Result<T, any Error>) -> Decision? {
        guard !state.done else { return nil }
        state.done = true
        defer {
            state.continuation = nil
            state.cleanup = nil
        }
        if state.continuation == nil { state.pending = result }
        return Decision(continuation: state.continuation, cleanup: state.cleanup, result: result)
    }

    /// Resumes the caller and cleans up after a decision. Returns whether there was one.
    @discardableResult
    private func resume(_ decision: Decision?) -> Bool {
        guard let decision else { return false }
        decision.continuation?.resume(with: decision.result)
        decision.cleanup?()
        return true
    }
}

extension Result where Failure == any Error {
    init(awaiting body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Bounds every store call: a store that does not answer (a database server that vanished
/// mid-query, a pool waiting for a connection that never comes) fails the call with
/// `HubError(.unavailable)` instead of holding the caller — a request, the dispatcher, a
/// shutdown — for good. The hub wraps its store in one (``DeadlineStore``).
///
/// A write that missed its deadline may still commit later: callers treat `.unavailable` as
/// "outcome unknown, retry" (publishes are idempotent by `appNotificationId`; outbox work is
/// at-least-once). A store that holds the deadline off before it commits (``DeadlineHold``, as
/// the PostgreSQL store does) makes that "not stored" instead, and answers a commit sent in time
/// however late it comes.
public struct StoreDeadline: StoreInterceptor {
    /// The longest a call may take.
    public let timeout: Duration

    public init(timeout: Duration) { self.timeout = timeout }

    public func intercept<T: Sendable>(
        _ name: String, _ call: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await withDeadline(timeout, "store.\(name)", call)
        } catch is DeadlineExceeded {
            throw HubError(.unavailable, "The store did not answer \(name) within \(timeout); retry later.")
        }
    }
}

/// A store whose every call ends within a deadline (see ``StoreDeadline``).
public typealias DeadlineStore = InterceptedStore<StoreDeadline>
