import Foundation
import Synchronization

/// The outcomes of sends not yet written to the store. Sends add to it; the dispatcher's recorder
/// loop writes everything queued (up to ``DispatcherConfiguration/maxUnrecordedOutcomes``) in one
/// ``OutboxStore/recordOutcomes(_:)`` call, again and again, so a busy dispatcher writes large
/// batches. (A cap of four claims per write let the backlog grow past 150,000 outcomes with 100
/// endpoints per user: every write waited for a commit shared with publishes, and carried only
/// 1,024.) No batch waits for company: the outcomes that come while one write is in flight go in
/// the next, so the batches grow with the rate and the store's speed, and an outcome that finds the
/// recorder idle is written at once. (A fixed 50 ms wait for a small batch held every outcome's
/// lease and `finishedAt` back at moderate rates: issue 43.)
final class OutcomeRecorder: Sendable {
    private struct State {
        var queue: [OutboxOutcome] = []
        /// The webhook rows each queued outcome makes, written in its transaction (parallel to `queue`).
        var events: [[WebhookDelivery]] = []
        /// Whether a queued outcome is a webhook event's: once written, that user's next event may
        /// be claimed (``OutboxMachine/webhookOrder(table:row:column:)``), so the lane is woken.
        var webhookOutcomes = false
        /// Taken by the writer, not yet written.
        var writing = 0
        /// No more outcomes will come (the lanes stopped).
        var closed = false
        /// The writer loop ended.
        var finished = false
    }

    private let state = Mutex(State())
    let bells: Bells
    static let bell = Bell("outcome recorder")

    init(bells: Bells) { self.bells = bells }

    /// Queues `outcome`, and the webhook rows `events` it makes (written in the same transaction).
    func add(_ outcome: OutboxOutcome, events: [WebhookDelivery] = [], webhook: Bool = false) {
        state.withLock {
            $0.queue.append(outcome)
            $0.events.append(events)
            if webhook { $0.webhookOutcomes = true }
        }
        ring()
    }

    func ring() { bells.ring(OutcomeRecorder.bell) }

    /// Outcomes queued or being written.
    var backlog: Int { state.withLock { $0.queue.count + $0.writing } }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Outcomes queued, not yet taken by the writer.
    var queued: Int { state.withLock { $0.queue.count } }

    /// Up to `limit` queued outcomes for the writer with the webhook rows of each, and whether no
    /// more will come.
    func take(
        _ limit: Int
    ) -> (batch: [OutboxOutcome], events: [[WebhookDelivery]], webhook: Bool, closed: Bool) {
        state.withLock { state in
            let batch = Array(state.queue.prefix(limit))
            let events = Array(state.events.prefix(limit))
            let webhook = state.webhookOutcomes
            state.webhookOutcomes = false
            state.queue.removeFirst(batch.count)
            state.events.removeFirst(events.count)
            state.writing += batch.count
            return (batch, events, webhook, state.closed)
        }
    }

    /// The writer wrote `count` outcomes.
    func written(_ count: Int) { state.withLock { $0.writing -= count } }

    /// The writer failed to write `batch`: queue it again, first.
    func putBack(_ batch: [OutboxOutcome], events: [[WebhookDelivery]], webhook: Bool) {
        state.withLock { state in
            if webhook { state.webhookOutcomes = true }
            state.writing -= batch.count
            state.queue.insert(contentsOf: batch, at: 0)
            state.events.insert(contentsOf: events, at: 0)
        }
    }

    func close() {
        state.withLock { $0.closed = true }
        ring()
    }

    func markFinished() { state.withLock { $0.finished = true } }
}

extension Dispatcher {
    /// Writes queued outcomes in batches until the lanes stopped and the queue is empty. A write
    /// that fails is tried again with a capped back-off (the leases are renewed meanwhile); after
    /// shutdown began, for at most `shutdownFlushTimeout`, after which the unwritten deliveries are
    /// left to their leases (sent again: at-least-once).
    func runRecorder() async {
        var failures = 0
        var closedAt: ContinuousClock.Instant?
        while true {
            let ticket = bells.ticket()
            let (batch, events, webhook, closed) = recorder.take(configuration.maxUnrecordedOutcomes)
            if closed && closedAt == nil { closedAt = clock.now }
            if batch.isEmpty {
                // Cancelled (not a graceful shutdown): stop at once; unwritten outcomes are left
                // to their leases. Waiting would return at once and spin.
                if closed || Task.isCancelled { break }
                _ = await bells.wait(OutcomeRecorder.bell, after: ticket, timeout: .seconds(1))
                continue
            }
            let wasFull = recorder.backlog >= configuration.maxUnrecordedOutcomes
            do {
                let rows = events.flatMap { $0 }
                if rows.isEmpty {
                    try await store.recordOutcomes(batch)
                } else {
                    try await store.recordOutcomes(batch, enqueueing: rows, at: now())
                }
                recorder.written(batch.count)
                if !rows.isEmpty || webhook { pokeWebhooks() }
                leased.withLock { leased in for outcome in batch { leased.remove(outcome.id) } }
                faults.succeeded("recordOutcomes")
                failures = 0
                if wasFull { for lane in lanes { bells.ring(lane.slotBell) } }
            } catch {
                recorder.putBack(batch, events: events, webhook: webhook)
                failures += 1
                let delay = storeBackoff(failures)
                faults.failed("recordOutcomes", error, retryIn: delay)
                if let closedAt, clock.now - closedAt >= configuration.shutdownFlushTimeout {
                    logger.error(
                        "stopping with outcomes not written; those deliveries are sent again when their leases end",
                        metadata: ["count": "\(recorder.backlog)"])
                    break
                }
                if Task.isCancelled { break }
                try? await clock.sleep(for: delay)
            }
        }
        recorder.markFinished()
        bells.ring(Self.leaseBell)
    }
}
