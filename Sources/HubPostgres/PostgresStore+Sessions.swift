import Foundation
import HubCore
import Logging
import Metrics
import PostgresNIO
import Synchronization

// How the store talks to the server without ever waiting forever.
//
// Why this exists — the stall of issue 13 ("a store fault never stops the pipeline"): with
// postgres-nio 1.33, a statement sent on a connection the server has just closed can be lost.
// `PostgresConnection.query` writes its request into the channel with no write promise, from
// whatever thread the caller runs on; NIO runs that write later on the connection's event loop.
// When the server goes away (`pg_ctl stop`: FATAL 57P01, then the socket closes), NIO closes the
// channel and, one event-loop tick later, removes its handlers. A request written after that
// reaches no handler, the channel drops it, and the statement's promise is never completed: the
// `await` never returns, and it ignores cancellation. The window is not small under load — after
// a statement fails with 57P01, postgres-nio's own `withTransaction` at once sends `ROLLBACK` on
// the same, now closed connection; the pool may also lease a connection whose close it has not
// yet been told about (it learns of it after the handlers are removed). A dispatcher whose claim
// or outcome write hung there never claimed again (its lanes wait for that call), requests hung
// unanswered, and shutdown waited for them for good.
//
// The store therefore never uses postgres-nio's `withTransaction`, `PostgresClient.query` or the
// pool's keep-alive (whose query can hang the same way and then holds the pool's `run()` at
// shutdown). Instead:
// - Every statement is issued *on the connection's event loop*, after checking there that the
//   channel is still active. A session's whole body runs there (the loop is its preferred task
//   executor), so the answer to one statement resumes it on the thread that read the answer. On the event loop, an active channel still has its handlers (they
//   are removed in a later tick, after the channel became inactive), so the request reaches
//   postgres-nio's handler, which completes it: with rows, the server's error, or a failure when
//   the connection closes. A closed connection fails the statement at once as `unavailable`.
// - Every statement has a deadline (``PostgresStore/Configuration/statementTimeout``, enforced by
//   the server and, a little later, by the store, which then closes the connection: a server that
//   vanished without closing the socket).
// - Waiting for ``PostgresStore/run()`` and for a pooled connection is bounded by
//   ``PostgresStore/Configuration/leaseTimeout``.
// - Transactions are `BEGIN` … `COMMIT` on one leased connection; on failure `ROLLBACK` is sent
//   only if the connection is still open, and a connection whose `ROLLBACK` fails is closed rather
//   than handed back to the pool mid-transaction.

/// A leased connection and the deadline of each statement run on it.
struct Session: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    /// The longest one statement may take before the connection is closed; `nil`: no limit
    /// (migrations, which may build indexes on large tables).
    let timeout: Duration?
    /// Counts every statement run on the session: each is one round trip, as postgres-nio sends
    /// a statement only after the previous one's answer (`hub_postgres_round_trips_total`).
    var roundTrips: Counter?

    /// Runs `query` and collects its rows. Never waits longer than ``timeout``.
    /// - Throws: the server's error, or `HubError(.unavailable)` when the connection closed or the
    ///   statement missed its deadline (its outcome is then unknown).
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        roundTrips?.increment()
        return try await connection.boundedRows(query, logger: logger, timeout: timeout)
    }

    /// Closes the connection (the pool replaces it).
    func close() {
        let _: EventLoopFuture<Void> = connection.close()
    }
}

extension PostgresConnection {
    /// Runs `query` on the connection's event loop, so that it can never be lost on a closed
    /// channel (see the top of this file), and gives up after `timeout`, closing the connection.
    func boundedRows(_ query: PostgresQuery, logger: Logger, timeout: Duration?) async throws -> [PostgresRow] {
        let connection = self
        return try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<[PostgresRow], any Error>) in
            let once = ResumeOnce(continuation)
            let eventLoop = connection.eventLoop
            let start: @Sendable () -> Void = {
                guard !connection.isClosed else {
                    once.resume(.failure(SessionFailure.closed))
                    return
                }
                let timer = timeout.map { timeout in
                    eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                        if once.resume(.failure(SessionFailure.timedOut(timeout))) {
                            let _: EventLoopFuture<Void> = connection.close()
                        }
                    }
                }
                connection.query(query, logger: logger).whenComplete { result in
                    timer?.cancel()
                    once.resume(result.map(\.rows))
                }
            }
            // A session's work runs on its connection's event loop (see `withSession`).
            if eventLoop.inEventLoop { start() } else { eventLoop.execute(start) }
        }
    }
}

/// Why a statement ended without an answer from the server.
enum SessionFailure: Error, CustomStringConvertible {
    case closed
    case timedOut(Duration)
    case leaseTimedOut(Duration)
    case notRunning(Duration)

    var description: String {
        switch self {
        case .closed: "the connection to PostgreSQL closed"
        case .timedOut(let timeout): "PostgreSQL did not answer a statement within \(timeout)"
        case .leaseTimedOut(let timeout): "no PostgreSQL connection became free within \(timeout)"
        case .notRunning(let timeout): "the PostgreSQL store did not start within \(timeout) (is run() called?)"
        }
    }

    var hubError: HubError { HubError(.unavailable, "The PostgreSQL database is unavailable (\(self)); retry later.") }
}

/// Resumes a continuation with the first result it is given; later ones are ignored.
final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    /// - Returns: whether this call resumed it.
    @discardableResult
    func resume(_ result: Result<T, any Error>) -> Bool {
        let continuation = self.continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        continuation?.resume(with: result)
        return continuation != nil
    }
}

/// Whether a lease came in time: the lease and the timer race, the first to move wins.
private final class LeaseRace: Sendable {
    private let state = Atomic<Int>(0)  // 0 waiting, 1 leased, 2 timed out
    func leased() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged }
    func timedOut() -> Bool { state.compareExchange(expected: 0, desired: 2, ordering: .relaxed).exchanged }
}

extension PostgresStore {
    /// The client-side deadline of one statement: the server's `statement_timeout` plus a margin,
    /// so that normally the server cancels the statement and the connection stays usable.
    var statementDeadline: Duration { configuration.statementTimeout + .seconds(2) }

    /// Leases a connection of `client` (waiting at most `leaseTimeout`, also for `started`) and
    /// runs `body` on it.
    func withSession<Result: Sendable>(
        _ client: PostgresClient, started: Latch, leaseTimeout: Duration, statementTimeout: Duration?,
        _ body: @escaping @Sendable (Session) async throws -> Result
    ) async throws -> Result {
        let logger = self.logger
        let race = LeaseRace()
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await started.wait()
                return try await client.withConnection { connection in
                    guard race.leased() else { throw SessionFailure.leaseTimedOut(leaseTimeout).hubError }
                    // On the connection's event loop: each statement is written there at once, and
                    // its answer resumes `body` on the thread that read it (no hop per statement).
                    return try await withTaskExecutorPreference(EventLoopExecutor(connection.eventLoop)) {
                        try await body(
                            Session(
                                connection: connection, logger: logger, timeout: statementTimeout,
                                roundTrips: self.roundTrips))
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: leaseTimeout)
                if race.timedOut() {
                    throw (started.isOpen ? SessionFailure.leaseTimedOut(leaseTimeout) : .notRunning(leaseTimeout))
                        .hubError
                }
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
            }
            throw SessionFailure.closed.hubError  // not reached: the first task returns or throws
        }
    }

    /// Runs `body` on a pooled connection (no transaction).
    func withSession<Result: Sendable>(
        _ body: @escaping @Sendable (Session) async throws -> Result
    ) async throws
        -> Result
    {
        var host: Int?
        do {
            let target = try await hosts.target()
            host = target
            return try await withSession(
                clients[target], started: started, leaseTimeout: configuration.leaseTimeout,
                statementTimeout: statementDeadline
            ) { session in
                try await self.hosts.check(session, pool: "queries", host: target)
                return try await body(session)
            }
        } catch {
            let translated = Self.translate(error)
            if let host { hosts.failed(host: host, error: translated) }
            throw translated
        }
    }

    /// Runs `body` between `BEGIN` and `COMMIT` on `session`; rolls back when it throws.
    ///
    /// Under a caller's deadline (`HubCore.DeadlineHold.current`: the hub's store deadline) the
    /// deadline is held off before `COMMIT` is sent: a caller answered `unavailable` at its
    /// deadline then never has its transaction committed behind its back (a publish answered 503
    /// is not stored), and one whose `COMMIT` was sent in time gets the commit's answer, however
    /// late (bounded by the statement deadline). When the deadline has already passed, the
    /// transaction rolls back and `CallerAlreadyAnswered` (HubCore) is thrown.
    static func inTransaction<Result: Sendable>(
        _ session: Session, _ body: @Sendable (Session) async throws -> Result
    ) async throws -> Result {
        try await session.run(Begin.self)
        let value: Result
        let hold = DeadlineHold.current
        do {
            value = try await body(session)
            guard hold?.hold() ?? true else { throw CallerAlreadyAnswered() }
        } catch {
            if !session.connection.isClosed {
                do {
                    try await session.run(Rollback.self)
                } catch {
                    // Never hand a connection back to the pool in the middle of a transaction.
                    session.close()
                }
            }
            throw error
        }
        do {
            try await session.run(Commit.self)
        } catch {
            hold?.release()
            throw error
        }
        return value
    }
}

enum Begin: NamedStatement {
    static let name = "hub_begin"
    static let sql = "BEGIN"
}

enum Commit: NamedStatement {
    static let name = "hub_commit"
    static let sql = "COMMIT"
}

enum Rollback: NamedStatement {
    static let name = "hub_rollback"
    static let sql = "ROLLBACK"
}

/// A one-way door: ``wait()`` returns once ``open()`` was called (at once after that); a
/// cancelled waiter stops waiting.
final class Latch: Sendable {
    private struct State {
        var open = false
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    }
    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.open } }

    /// Waits until the latch opens; throws `CancellationError` when the task is cancelled first.
    func wait() async throws {
        let id = state.withLock { state -> UInt64? in
            if state.open { return nil }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate = state.withLock { state -> Result<Void, any Error>? in
                    if state.open { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }
}
