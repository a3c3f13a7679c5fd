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
/// shared watchdog (not a timer per call), so a deadline may fire up to 50 ms late.
public func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(timeout, operation, watchdog: .shared, body)
}

/// ``withDeadline(_:_:_:)`` on `watchdog`'s clock (tests keep deadlines on a manual one).
func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: String, watchdog: DeadlineWatchdog,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.begin(continuation)
            let work = Task {
                let result = await Result(awaiting: body)
                race.finish(result)
            }
            let watch = watchdog.watch(until: watchdog.clock.now + timeout) {
                if race.finish(.failure(DeadlineExceeded(operation: operation, timeout: timeout))) { work.cancel() }
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
final class DeadlineWatchdog: Sendable {
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

    init(clock: any HubClock) { self.clock = clock }

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
    var count: Int { state.withLock { $0.watches.count } }

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

/// The first of work, timer and cancellation to finish resumes the caller; the others are ignored.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var pending: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

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
        let (continuation, cleanup, won) = state.withLock {
            state -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?, Bool) in
            guard !state.done else { return (nil, nil, false) }
            state.done = true
            defer {
                state.continuation = nil
                state.cleanup = nil
            }
            if state.continuation == nil { state.pending = result }
            return (state.continuation, state.cleanup, true)
        }
        continuation?.resume(with: result)
        cleanup?()
        return won
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
/// at-least-once).
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
