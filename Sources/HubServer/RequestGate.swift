import Metrics
import NIOCore
import Synchronization

/// How many requests run in tasks at once, across all connections; the next ones wait, as parsed
/// heads, in the order they came, and each starts when a running one ends.
///
/// A burst of requests (thousands of devices reconnecting at once, each sending a long-poll)
/// otherwise starts a task per request at once. The cooperative pool works them off a few at a
/// time, so thousands of tasks, with their frame slabs, live at the same moment; when they end,
/// their memory is freed between the objects the requests left behind (parked long-polls and
/// streams), and the heap stays fragmented: 1–3 KiB more per waiting connection after a burst of
/// 10,000 (docs/benchmarks.md, "Waiting"). Bounded, the same few slabs are used over and over.
///
/// A request whose body is still arriving when its head is read starts at once and is not
/// counted: it would hold its place for as long as its client takes to send the body, and a few
/// slow uploads must not hold every other request back. Requests that wait (long-polls, event
/// streams) hold their place only until they park. `/healthz`, `/readyz` and `/metrics` are not
/// counted either: a probe must get its answer (a 503 within a second when the store hangs)
/// even while every place is taken by requests waiting on that store.
///
/// It bounds memory under bursts of well-behaved requests; it is not a defence against a hostile
/// flood (that is what the connection caps, timeouts and rate limits are for).
final class RequestGate: Sendable {
    /// The most requests running at once.
    let limit: Int

    private struct State {
        var running = 0
        var waiting = CircularBuffer<@Sendable () -> Void>()
    }
    private let state = Mutex(State())
    private let waitingGauge = Gauge(label: "hub_requests_waiting")

    init(limit: Int) {
        precondition(limit > 0, "a request gate lets at least one request run")
        self.limit = limit
    }

    /// Runs `start` now when fewer than ``limit`` requests run, or later, from ``leave()``, when
    /// one ends; `start` must lead to exactly one ``leave()``.
    func enter(_ start: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.running < limit {
                state.running += 1
                return true
            }
            state.waiting.append(start)
            // Under the lock, so the gauge never ends on an older count than the last change.
            waitingGauge.record(state.waiting.count)
            return false
        }
        if now { start() }
    }

    /// A request ended: the longest-waiting one starts in its place.
    func leave() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            if !state.waiting.isEmpty {
                let next = state.waiting.removeFirst()
                waitingGauge.record(state.waiting.count)
                return next
            }
            precondition(state.running > 0, "a request left the gate more often than it entered")
            state.running -= 1
            return nil
        }
        next?()
    }

    /// Requests waiting to start.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Requests running.
    var runningCount: Int { state.withLock { $0.running } }
}
