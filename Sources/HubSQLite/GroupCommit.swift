import GRDB
import Synchronization

/// Commits concurrent writes together: while one transaction is being written (and fsynced),
/// the writes that arrive queue up; the next transaction runs them all, each in its own savepoint,
/// and answers each caller only after that transaction committed.
///
/// With `synchronous = FULL` the fsync dominates the cost of a small transaction, so sharing it
/// between concurrent publishes multiplies throughput while keeping "returned means durable".
/// A job that throws rolls back its own savepoint and fails alone; a failed commit fails the batch.
/// A job alone in its transaction (most of them at moderate rates) runs without a savepoint.
final class GroupCommit: Sendable {
    private struct Job: Sendable {
        let work: @Sendable (Database) throws -> any Sendable
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var queue: [Job] = []
        var flushing = false
    }

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    /// The most jobs one transaction takes, so one commit never holds the lock for long.
    private let maxBatch: Int

    init(writer: any DatabaseWriter, maxBatch: Int = 256) {
        self.writer = writer
        self.maxBatch = maxBatch
    }

    /// Runs `work` in a savepoint of the next group transaction; returns after that transaction committed.
    func write<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let value = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<any Sendable, any Error>) in
            let job = Job(work: { try work($0) }, continuation: continuation)
            let startFlusher = state.withLock { state -> Bool in
                state.queue.append(job)
                guard !state.flushing else { return false }
                state.flushing = true
                return true
            }
            if startFlusher {
                Task { await self.flush() }
            }
        }
        guard let typed = value as? T else {
            preconditionFailure("group commit returned \(type(of: value)), not \(T.self)")
        }
        return typed
    }

    /// Writes batches until the queue is empty.
    private func flush() async {
        while true {
            let batch = state.withLock { state -> [Job] in
                guard !state.queue.isEmpty else {
                    state.flushing = false
                    return []
                }
                let batch = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty { return }
            let results: [Result<any Sendable, any Error>]
            do {
                if batch.count == 1 {
                    // Alone, a job needs no savepoint: if it throws, the transaction rolls back.
                    let job = batch[0]
                    results = [.success(try await writer.write { db in try job.work(db) })]
                } else {
                    results = try await writer.write { db in
                        batch.map { job in Self.run(job, in: db) }
                    }
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (job, result) in zip(batch, results) { job.continuation.resume(with: result) }
        }
    }

    private static func run(_ job: Job, in db: Database) -> Result<any Sendable, any Error> {
        guard db.isInsideTransaction else { return Result { try job.work(db) } }
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
