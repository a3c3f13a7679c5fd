import Foundation
import GRDB
import HubCore
import Synchronization

/// Copies the write-ahead log into the database file off the commit path.
///
/// By default SQLite checkpoints in the connection that commits once the log passes 1,000 pages:
/// that commit then also writes those pages to the database file and fsyncs it, and every
/// publish queued behind it waits (a stall of several milliseconds every few hundred commits at
/// 1,000 publishes/s). Here the writer's automatic checkpoint only stands in as a backstop (at
/// ``backstopPages``), and this checkpointer runs passive checkpoints on a connection of its
/// own, on a thread of its own, every ``interval`` while commits come in. A passive checkpoint
/// takes no lock a writer or reader waits for; the writer starts the log over once it has all
/// been copied.
///
/// The thread ends after an interval without commits and starts again with the next one.
final class Checkpointer: Sendable {
    /// The writer's automatic checkpoint threshold while a checkpointer runs (pages, ~40 MB).
    static let backstopPages = 10_000

    private struct State {
        var connection: DatabaseQueue?
        /// Commits since the last checkpoint started.
        var dirty = false
        var running = false
        var closed = false
        var checkpoints = 0
    }

    private let path: String
    private let interval: TimeInterval
    private let state = Mutex(State())

    init(path: String, interval: Duration = .milliseconds(200)) {
        self.path = path
        self.interval = interval.seconds
    }

    /// Checkpoints run so far (tests).
    var checkpoints: Int { state.withLock { $0.checkpoints } }

    /// Whether the checkpoint thread runs now (tests).
    var isRunning: Bool { state.withLock { $0.running } }

    /// The checkpoint thread's name, as `top -H` and `perf` show it.
    static let threadName = "hub-checkpoint"

    /// A transaction was committed: a checkpoint is due within ``interval``.
    func committed() {
        let start = state.withLock { state -> Bool in
            state.dirty = true
            guard !state.running, !state.closed else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        Thread.start(named: Self.threadName) { self.loop() }
    }

    /// Stops checkpointing and closes the connection (after a checkpoint in progress).
    func close() {
        let connection = state.withLock { state -> DatabaseQueue? in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        try? connection?.close()
    }

    private func loop() {
        while true {
            Thread.sleep(forTimeInterval: interval)
            let due = state.withLock { state -> Bool in
                guard state.dirty, !state.closed else {
                    state.running = false
                    return false
                }
                state.dirty = false
                return true
            }
            guard due else { return }
            checkpoint()
        }
    }

    private func checkpoint() {
        do {
            let opened = try state.withLock { state -> DatabaseQueue? in
                guard !state.closed else { return nil }
                if let connection = state.connection { return connection }
                var configuration = Configuration()
                configuration.label = "HubSQLite.checkpoint"
                let connection = try DatabaseQueue(path: path, configuration: configuration)
                state.connection = connection
                return connection
            }
            guard let connection = opened else { return }
            try connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
            state.withLock { $0.checkpoints += 1 }
        } catch {
            // The writer's backstop checkpoint still bounds the log; try again at the next commit.
        }
    }
}
