import Foundation
import HubCore

/// When the commit thread holds a transaction back briefly for company (see ``GroupCommit``).
///
/// Each durable commit costs an fsync. Under a steady, moderate rate of writes from many callers
/// (1,000 publishes/s from many connections) transactions hold one or two jobs, and the fsyncs
/// were most of the commit thread's work; waiting `length` for the next arrivals shares them
/// (measured back to back at 1,000 publishes/s: a 1 ms window, 10–15 % less CPU per publish, p99
/// within the noise; 2 ms saved 25 % but added 2–3 ms to the p99). Waiting only pays when others
/// are writing at the same time, so the window opens only when
/// - durable jobs arrive, on average, less than twice `length` apart (one more is likely within
///   it), and
/// - at least a quarter of them arrived while another job was queued or being committed (a
///   single caller that writes, waits for its commit and writes again never overlaps one: it
///   would only wait), and
/// - fewer than `crowd` jobs are queued (a crowd shares its fsync already).
struct CommitWindow: Sendable {
    /// How long a transaction is held back; zero turns the window off.
    let length: Duration
    /// Queued jobs that already share a commit well enough.
    static let crowd = 8

    /// Moving average of the gap between durable arrivals, in seconds.
    private(set) var gap = Double.infinity
    /// Moving average of the share of durable arrivals that came while other jobs were queued or
    /// being committed.
    private(set) var overlap = 0.0
    private var lastArrival: ContinuousClock.Instant?

    init(length: Duration) { self.length = length }

    /// Weight of the newest sample in the moving averages.
    private static let weight = 0.125

    /// A durable job arrived at `now`; `whileOthersWrite`: other jobs were queued or being committed.
    mutating func arrived(at now: ContinuousClock.Instant, whileOthersWrite: Bool) {
        if let lastArrival {
            let seconds = min((now - lastArrival).seconds, 1)
            gap = gap.isFinite ? gap + Self.weight * (seconds - gap) : seconds
        }
        lastArrival = now
        overlap += Self.weight * ((whileOthersWrite ? 1 : 0) - overlap)
    }

    /// Whether to hold the next transaction back for `length`, with `queued` jobs waiting, some
    /// of them durable when `durableQueued`.
    func holds(queued: Int, durableQueued: Bool) -> Bool {
        length > .zero && durableQueued && (1..<Self.crowd).contains(queued) && gap < 2 * length.seconds
            && overlap >= 0.25
    }
}
