import Synchronization

// Several callers' writes in one transaction (the PostgreSQL store's group commit).
//
// Why: per publish the server spent ~0.75 ms of CPU, less than half of it executing the
// statements; the rest was the protocol, the commit and its WAL flush, and waking the backend —
// once per publish and round trip. The hub paid the same per round trip (a pooled connection's
// lease, its deadline timer, the statement's encoding and the hops to and from the connection's
// event loop). A batch of publishes to different feeds pays all of that once.
//
// How: callers queue their job and wait. At most `runners` batches run at once, each in a task of
// its own (so one caller's cancellation never fails the others' jobs); a runner takes up to
// `maxBatch` queued jobs, at most one per key (a feed's publishes take versions in turn, so two
// of them in one batch would wait for each other's lock) and none whose key a running batch
// holds, runs them, answers each caller, and takes the next batch until the queue is empty. A
// lone caller therefore runs at once, alone; batches form only while others are running, and
// grow with the load — no caller waits for company. A caller cancelled while its job is still
// queued (a store deadline passed, the request went away) takes it back and gets a
// CancellationError: abandoned work never reaches the database; a job already in a running
// batch completes.

/// Runs queued jobs in batches; see the comment above.
final class Batcher<Job: Sendable, Key: Hashable & Sendable, Output: Sendable>: Sendable {
    /// Runs one batch, answering each job in order: `results[i]` is `jobs[i]`'s.
    typealias Run = @Sendable (_ jobs: [Job]) async -> [Result<Output, any Error>]

    private struct Waiting {
        let id: UInt64
        let job: Job
        let key: Key
        let continuation: CheckedContinuation<Output, any Error>
    }

    private struct State {
        var queue: [Waiting] = []
        var nextID: UInt64 = 0
        var running = 0
        /// The keys of the jobs that running batches hold.
        var busy: Set<Key> = []
        var statistics = Statistics()
    }

    /// What the batcher has run so far.
    struct Statistics: Sendable, Equatable {
        var batches = 0
        var jobs = 0
        var largestBatch = 0
    }

    let runners: Int
    let maxBatch: Int
    private let state = Mutex(State())

    var statistics: Statistics { state.withLock { $0.statistics } }
    /// Jobs waiting for a batch.
    var queued: Int { state.withLock { $0.queue.count } }
    /// Runners at work: batches running, or about to look for the next one.
    var running: Int { state.withLock { $0.running } }

    /// - Parameters:
    ///   - runners: batches that run at once (at least 1).
    ///   - maxBatch: jobs per batch at most (at least 1).
    init(runners: Int, maxBatch: Int) {
        self.runners = max(1, runners)
        self.maxBatch = max(1, maxBatch)
    }

    /// Queues `job` and returns its result once a batch has run it. Every caller of one batcher
    /// passes the same `run`: a runner started by this call runs other callers' jobs with it.
    /// - Throws: `CancellationError` when the calling task is cancelled before a batch took the job.
    func submit(_ job: Job, key: Key, run: @escaping Run) async throws -> Output {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Under the lock that `withdraw` takes: a cancellation either comes before (the
                // flag is set, the job is never queued) or finds the job queued or taken.
                let action = state.withLock { state -> SubmitAction in
                    if Task.isCancelled { return .cancelled }
                    state.queue.append(Waiting(id: id, job: job, key: key, continuation: continuation))
                    guard state.running < runners else { return .none }
                    state.running += 1
                    return .start
                }
                switch action {
                case .none: break
                case .start: Task { await self.drain(run) }
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            withdraw(id)
        }
    }

    /// Takes job `id` off the queue, if it is still there, and fails its caller.
    private func withdraw(_ id: UInt64) {
        let withdrawn = state.withLock { state -> Waiting? in
            guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return nil }
            return state.queue.remove(at: index)
        }
        withdrawn?.continuation.resume(throwing: CancellationError())
    }

    /// Runs batches until the queue has nothing this runner may take.
    private func drain(_ run: Run) async {
        while let batch = take() {
            let results = await run(batch.map(\.job))
            state.withLock { state in
                for waiting in batch { state.busy.remove(waiting.key) }
            }
            for (index, waiting) in batch.enumerated() {
                waiting.continuation.resume(
                    with: index < results.count
                        ? results[index] : .failure(BatchFailure.unanswered))
            }
        }
    }

    /// The next batch, or nil (and one runner fewer) when there is none to take.
    private func take() -> [Waiting]? {
        state.withLock { state in
            var batch: [Waiting] = []
            var keys: Set<Key> = []
            var left: [Waiting] = []
            for waiting in state.queue {
                if batch.count < maxBatch, !state.busy.contains(waiting.key), keys.insert(waiting.key).inserted {
                    batch.append(waiting)
                } else {
                    left.append(waiting)
                }
            }
            guard !batch.isEmpty else {
                state.running -= 1
                return nil
            }
            state.queue = left
            state.busy.formUnion(keys)
            state.statistics.batches += 1
            state.statistics.jobs += batch.count
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            return batch
        }
    }
}

/// What a submitting caller does after queuing its job.
private enum SubmitAction {
    case none, start, cancelled
}

/// A batch's run returned fewer results than it had jobs (a programming error).
enum BatchFailure: Error {
    case unanswered
}
