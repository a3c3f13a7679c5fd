import Foundation
import GRDB
import HubCore
import Synchronization

/// Commits concurrent writes together: while one transaction is being written (and fsynced),
/// the writes that arrive queue up; the next transaction runs them all and answers each caller
/// only after that transaction committed.
///
/// With `synchronous = FULL` the fsync dominates the cost of a small transaction, so sharing it
/// between concurrent publishes multiplies throughput while keeping "returned means durable".
/// A job that throws fails alone: the batch's transaction rolls back and runs again with each job
/// in a savepoint of its own (jobs rarely throw, and savepoints cost two statements per job, so a
/// batch first runs without them). Jobs must therefore only change the database. A failed commit
/// fails the batch.
///
/// **Durability per job.** A job says whether its caller is promised durability (publishes,
/// state changes, endpoints) or not (outcomes, leases, sync times: losing one to a power cut only
/// means a delivery is sent again). A transaction of relaxed jobs only commits with
/// `synchronous = NORMAL` (WAL: no fsync); the next durable commit fsyncs the log and, with it, every
/// transaction before it, so what was durable stays durable and order is kept. A process that is
/// killed loses nothing either way (the log is in the page cache).
///
/// **Short transactions, the dispatcher first.** A transaction stops taking its batch's jobs once it
/// has run for `cycleBudget`; the jobs it did not run go back to the head of the queue. And each
/// batch takes the queued relaxed jobs (the dispatcher's claims and outcomes) before the durable
/// ones. Both bound how long a claim waits behind publishes: measured with 100 endpoints per user
/// and 128 publishes in flight, one transaction of every queued publish wrote ~13,000 rows, and the
/// dispatcher sent nothing for a third of the time, waiting for its claims and hand-offs. Jobs in
/// the queue are concurrent calls that have not returned, so running them in another order
/// changes nothing a caller can see.
///
/// **Small writes apart from batches.** A durable job is a caller's small write (a publish, a
/// state change) or a batch (``Size/batch``: a batch publish, a broadcast chunk's users), which
/// takes a hundred times longer. A transaction runs the queued small writes or the queued
/// batches, never both, and batches take every other turn while small writes keep coming: a
/// publish waits for at most the one batch transaction that runs when it arrives, not for the
/// batches queued with it (measured during a broadcast: a single publish's p99 was 20 times its
/// p99 alone), and batches are never starved.
///
/// **No window but the commit itself.** A transaction never waits for company: the jobs that
/// arrive while one commits share the next, so the batches grow with the rate and the fsync time
/// on their own, and a job that finds the commit thread free commits at once. (A fixed window,
/// held whenever writes came often and overlapped, added its length and the sleep's overshoot to
/// every publish at moderate rates: issue 43.)
///
/// **A thread of its own.** The transactions run on a dedicated thread, not in a task: a commit
/// cycle that had to wait for a cooperative thread between batches waited behind the very
/// requests it was holding up (measured under load: 6.7 ms per cycle for 12 jobs). The thread
/// ends after a second without work and starts again with the next write.
final class GroupCommit: Sendable {
    /// Whether a job's caller is promised that its write survives a power cut once it returns.
    enum Durability: Sendable {
        case durable
        case relaxed
    }

    /// Whether a durable job is one caller's small write or a batch of many (see the type's
    /// documentation: a transaction takes the one kind or the other).
    enum Size: Sendable {
        case small
        case batch
    }

    private struct Job: Sendable {
        let work: @Sendable (Database) throws -> any Sendable
        let durability: Durability
        let size: Size
        /// The caller's deadline (the hub's store deadline), held off from the moment the job
        /// runs until its result reaches the caller; a job whose caller was already answered
        /// never runs.
        let hold: DeadlineHold?
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var queue: [Job] = []
        /// The commit thread runs (it may be waiting for work).
        var running = false
        /// The commit thread waits on `wakeup`.
        var waiting = false
        /// The `synchronous` level the connection was last set to by this instance.
        var synchronous: Durability = .durable
        /// The last transaction passed over queued batches for small writes: the next is theirs.
        var batchesTurn = false
    }

    /// The commit thread's name, as `top -H` and `perf` show it (see `Thread.start(named:_:)`).
    static let threadName = "hub-commit"

    private let writer: any DatabaseWriter
    private let state: Mutex<State>
    private let wakeup = DispatchSemaphore(value: 0)
    /// The most jobs one transaction takes, so one commit never holds the lock for long.
    private let maxBatch: Int
    /// How long one transaction runs jobs before it commits and leaves the rest to the next.
    private let cycleBudget: Duration
    /// How long the commit thread waits for work before it ends.
    private let idleTimeout: DispatchTimeInterval
    /// Called on the commit thread after each transaction that committed.
    private let afterCommit: (@Sendable () -> Void)?

    init(
        writer: any DatabaseWriter, maxBatch: Int = 256, cycleBudget: Duration = .milliseconds(20),
        idleTimeout: DispatchTimeInterval = .seconds(1), afterCommit: (@Sendable () -> Void)? = nil
    ) {
        self.writer = writer
        self.maxBatch = maxBatch
        self.cycleBudget = cycleBudget
        self.state = Mutex(State())
        self.idleTimeout = idleTimeout
        self.afterCommit = afterCommit
    }

    /// Runs `work` in a savepoint of the next group transaction; returns after that transaction
    /// committed — with an fsync when `durability` is `.durable`. A `.batch` runs in a
    /// transaction without small writes.
    func write<T: Sendable>(
        _ durability: Durability = .durable, size: Size = .small, _ work: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        let value = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<any Sendable, any Error>) in
            enqueue(
                Job(
                    work: { try work($0) }, durability: durability, size: size, hold: DeadlineHold.current,
                    continuation: continuation))
        }
        guard let typed = value as? T else {
            preconditionFailure("group commit returned \(type(of: value)), not \(T.self)")
        }
        return typed
    }

    /// Whether the commit thread runs now (tests).
    var isRunning: Bool { state.withLock { $0.running } }

    /// Jobs waiting for a transaction (tests).
    var queued: Int { state.withLock { $0.queue.count } }

    private func enqueue(_ job: Job) {
        enum Action { case none, signal, start }
        let action = state.withLock { state -> Action in
            state.queue.append(job)
            if !state.running {
                state.running = true
                return .start
            }
            if state.waiting {
                state.waiting = false
                return .signal
            }
            return .none
        }
        switch action {
        case .none: break
        case .signal: wakeup.signal()
        case .start:
            Thread.start(named: Self.threadName) { self.commitLoop() }
        }
    }

    /// Writes batches until no work came for `idleTimeout`.
    private func commitLoop() {
        while true {
            let batch = state.withLock { state -> [Job] in
                let batch = Self.take(&state.queue, maxBatch, batchesTurn: &state.batchesTurn)
                if batch.isEmpty { state.waiting = true }
                return batch
            }
            if batch.isEmpty {
                if wakeup.wait(timeout: .now() + idleTimeout) == .success { continue }
                // Timed out. A write that came in meanwhile cleared `waiting` and signals (or is
                // about to): take its signal and go on. Otherwise nothing was queued: end.
                let ended = state.withLock { state -> Bool in
                    guard state.waiting else { return false }
                    state.waiting = false
                    state.running = false
                    return true
                }
                if ended { return }
                wakeup.wait()
                continue
            }
            let results = commit(batch)
            if results.count < batch.count {
                state.withLock { $0.queue.insert(contentsOf: batch[results.count...], at: 0) }
            }
            for (job, result) in zip(batch, results) { job.continuation.resume(with: result) }
            // A job that got its result keeps its hold: the result, on its way to the caller,
            // decides the call (releasing here would let a deadline that passed meanwhile answer
            // first). One put back in the queue lets go: it holds again when it runs, if its
            // caller is still waiting.
            for job in batch[results.count...] { job.hold?.release() }
        }
    }

    /// Takes up to `limit` jobs off `queue`: relaxed ones first (at most half of `limit` while
    /// durable ones wait, so a crowd of relaxed jobs never starves a publish), then durable ones,
    /// then more relaxed ones if there is room; each kind in the order it came. The durable ones
    /// are the small writes or the batches, not both: the batches when no small write waits or
    /// when `batchesTurn` (set when small writes went before waiting batches).
    private static func take(_ queue: inout [Job], _ limit: Int, batchesTurn: inout Bool) -> [Job] {
        let relaxed = queue.filter { $0.durability == .relaxed }
        let small = queue.filter { $0.durability == .durable && $0.size == .small }
        let batches = queue.filter { $0.durability == .durable && $0.size == .batch }
        let takesBatches = !batches.isEmpty && (small.isEmpty || batchesTurn)
        batchesTurn = !takesBatches && !batches.isEmpty
        let durable = takesBatches ? batches : small
        let passedOver = takesBatches ? small : batches
        let first = durable.isEmpty ? min(limit, relaxed.count) : min(max(1, limit / 2), relaxed.count)
        let durableTaken = min(limit - first, durable.count)
        let moreRelaxed = min(limit - first - durableTaken, relaxed.count - first)
        let batch = relaxed[..<first] + durable[..<durableTaken] + relaxed[first..<(first + moreRelaxed)]
        queue = Array(relaxed[(first + moreRelaxed)...] + durable[durableTaken...] + passedOver)
        return Array(batch)
    }

    /// Runs `batch`'s jobs with `run` in order until the transaction's budget is spent and it ran
    /// a durable job, if the batch has one (so relaxed jobs that fill the budget never keep
    /// publishes waiting); the results of the jobs it ran.
    private func runWithinBudget(
        _ batch: [Job], _ run: (Job) throws -> Result<any Sendable, any Error>
    ) rethrows -> [Result<any Sendable, any Error>] {
        var results: [Result<any Sendable, any Error>] = []
        let start = ContinuousClock.now
        // Until a durable job ran, relaxed ones do not end the transaction (when there is one).
        var mayStop = !batch.contains { $0.durability == .durable }
        for job in batch {
            results.append(try run(job))
            if job.durability == .durable { mayStop = true }
            if mayStop && ContinuousClock.now - start >= cycleBudget { break }
        }
        return results
    }

    /// Runs `batch` in one transaction on this thread, stopping after `cycleBudget`: one result per
    /// job it ran, in order (at least the first job runs).
    private func commit(_ batch: [Job]) -> [Result<any Sendable, any Error>] {
        let durability: Durability = batch.contains { $0.durability == .durable } ? .durable : .relaxed
        do {
            let results = try writer.writeWithoutTransaction { db in
                try setSynchronous(durability, db)
                var results: [Result<any Sendable, any Error>] = []
                do {
                    // Jobs rarely throw: run them without a savepoint each (two statements per
                    // job and the pager's bookkeeping), all or nothing …
                    try db.inTransaction {
                        results = try runWithinBudget(batch) { job in
                            guard job.hold?.hold() ?? true else { return .failure(CallerAlreadyAnswered()) }
                            do { return .success(try job.work(db)) } catch { throw JobFailed(error: error) }
                        }
                        return .commit
                    }
                } catch let failed as JobFailed where batch.count == 1 {
                    // … a job alone fails with its transaction …
                    throw failed.error
                } catch is JobFailed {
                    // … and when one of several threw (the transaction rolled back), again, each
                    // job in a savepoint of its own, so that only the one that throws fails.
                    try db.inTransaction {
                        results = runWithinBudget(batch) { Self.run($0, in: db) }
                        return .commit
                    }
                }
                return results
            }
            afterCommit?()
            return results
        } catch {
            return batch.map { _ in .failure(error) }
        }
    }

    /// Sets the connection's `synchronous` level for the next commit, if it differs.
    private func setSynchronous(_ durability: Durability, _ db: Database) throws {
        let current = state.withLock { $0.synchronous }
        guard current != durability else { return }
        try db.execute(sql: durability == .durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        state.withLock { $0.synchronous = durability }
    }

    /// A job of a batch run without savepoints threw `error`: the batch runs again with them.
    private struct JobFailed: Error {
        let error: any Error
    }

    private static func run(_ job: Job, in db: Database) -> Result<any Sendable, any Error> {
        guard job.hold?.hold() ?? true else { return .failure(CallerAlreadyAnswered()) }
        var value: (any Sendable)?
        do {
            try db.inSavepoint {
                value = try job.work(db)
                return .commit
            }
            guard let value else { return .failure(DatabaseError(message: "a grouped write returned nothing")) }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}
