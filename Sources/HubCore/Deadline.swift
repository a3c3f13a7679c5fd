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
/// finish on its own. Cancelling the caller cancels the operation too.
public func withDeadline<T: Sendable>(
    _ timeout: Duration, _ operation: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.begin(continuation)
            let work = Task {
                let result = await Result(awaiting: body)
                race.finish(result)
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                if race.finish(.failure(DeadlineExceeded(operation: operation, timeout: timeout))) { work.cancel() }
            }
            race.onFinish {
                work.cancel(); timer.cancel()
            }
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
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
