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
/// 10,000 (README, "Waiting"). Bounded, the same few slabs are used over and over.
///
/// A request whose body is still arriving when its head is read starts at once and is not
/// counted: it would hold its place for as long as its client takes to send the body, and a few
/// slow uploads must not hold every other request back. Requests that wait (long-polls, event
/// streams) hold their place only until they park.
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
            return false
        }
        if now { start() } else { waitingGauge.record(waitingCount) }
    }

    /// A request ended: the longest-waiting one starts in its place.
    func leave() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.running -= 1
            return nil
        }
        if let next {
            waitingGauge.record(waitingCount)
            next()
        }
    }

    /// Requests waiting to start.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Requests running.
    var runningCount: Int { state.withLock { $0.running } }
}
