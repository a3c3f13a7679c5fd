public import Foundation
public import HubCore
import Synchronization

/// A clock that moves only when the test says: inject it into the ``Hub`` (and its
/// `FeedSignals`, rate limiter, transports' `now`) and call ``advance(by:)`` instead of sleeping.
///
/// Sleepers whose deadline the clock passes resume in deadline order; a sleeper that is cancelled
/// throws `CancellationError` at once. Because the code under test runs on other tasks, a test
/// usually waits until that code is asleep before moving the clock (``sleeperCount``, or what the
/// code exposes of its waits) so an advance cannot slip in before the sleep it is meant to end:
///
/// ```swift
/// let clock = ManualClock()
/// let hub = try Hub(configuration: configuration, store: store, transports: [flaky], clock: clock)
/// // … publish; the first attempt fails with a retry in 30 s …
/// #expect(await eventually { clock.sleeperCount >= 1 })
/// clock.advance(by: .seconds(30))
/// #expect(await eventually { flaky.deliveries.count == 2 })
/// ```
public final class ManualClock: HubClock {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    /// The instant the clock started at (a real one, so instants compare with the system's).
    public let origin: ContinuousClock.Instant
    /// The wall-clock date the clock started at.
    public let startDate: Date

    /// - Parameter date: the wall-clock time at the start (``date``); whole milliseconds by
    ///   default, as the stores keep them.
    public init(date: Date = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)) {
        origin = .now
        startDate = date
    }

    /// How far the clock was advanced.
    public var elapsed: Duration { state.withLock { $0.elapsed } }

    public var now: ContinuousClock.Instant { origin + elapsed }

    public var date: Date { startDate.addingTimeInterval(elapsed.seconds) }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= origin + state.elapsed { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward by `duration` and wakes the sleepers whose deadline it reached.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a clock only moves forward")
        let due = state.withLock { state -> [Sleeper] in
            state.elapsed += duration
            let now = origin + state.elapsed
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// How many sleeps are waiting for the clock to move.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }
}
