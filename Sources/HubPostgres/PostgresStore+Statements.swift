import Logging
import NIOCore
import PostgresNIO
import Synchronization

// Named statements: the store's frequent statements are prepared once per connection.
//
// Why: postgres-nio sends an unnamed statement as Parse + Describe + Bind + Execute, so the
// server parses and plans it and the hub decodes its parameter and row descriptions on every
// call; for the publish and claim statements that was most of the hub's CPU in the database
// client. A named statement (postgres-nio's `PostgresPreparedStatement`) is parsed and described
// once per connection — the first run costs one more round trip — and after that each run sends
// only Bind + Execute with its values. A connection the pool opens anew prepares afresh.
//
// Safety: postgres-nio remembers a failed preparation for the rest of the connection's life and
// fails every later run of that statement with the same error (a table missing while a
// migration runs, a statement the server cancelled). So a named statement that fails with a
// server error closes its connection — the pool opens another — unless the error is one a
// prepared statement meets while it runs: a serialization failure or deadlock (the transaction
// is run again), a constraint violation, or a data exception (class 22: a value the server
// cannot store, such as U+0000 in a jsonb payload — postgres-nio prepares in a step of its own,
// so an error while running leaves the preparation intact). Closing for those would only make
// the next caller meet a connection the pool has not yet seen close.
//
// Parameter types are the types of the first run's values (a `nil` value leaves the type to the
// server, which takes it from the statement: give such parameters a cast in the SQL).

/// A statement the store runs often enough to prepare once per connection.
protocol NamedStatement {
    /// The name it is prepared under, unique in the store (`hub_…`).
    static var name: String { get }
    /// Its SQL, with parameters `$1`, `$2`, … in the order of the bindings a run gives.
    static var sql: String { get }
}

/// A run of the named statement `Statement` with its values, as postgres-nio executes it.
struct Named<Statement: NamedStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { Statement.name }
    static var sql: String { Statement.sql }
    let bindings: PostgresBindings
    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension Session {
    /// Runs the named statement `statement` with `bindings` and collects its rows: prepared on
    /// this connection the first time, bound and run after that. Never waits longer than
    /// ``timeout``.
    /// - Throws: the server's error, or `SessionFailure` when the connection closed or the
    ///   statement missed its deadline (its outcome is then unknown).
    @discardableResult
    func run<Statement: NamedStatement>(
        _ statement: Statement.Type, _ bindings: PostgresBindings = PostgresBindings()
    ) async throws -> [PostgresRow] {
        roundTrips?.increment()
        do {
            return try await connection.boundedRows(
                Named<Statement>(bindings: bindings), logger: logger, timeout: timeout)
        } catch let error as PSQLError where error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? ""
            if !(PostgresStore.retryableStates.contains(state) || state.hasPrefix("23") || state.hasPrefix("22")) {
                close()
            }
            throw error
        }
    }
}

extension PostgresConnection {
    /// Runs `statement` on the connection's event loop, so that it can never be lost on a closed
    /// channel (see `PostgresStore+Sessions.swift`), and gives up after `timeout`, closing the
    /// connection (which fails the statement).
    func boundedRows<Statement: PostgresPreparedStatement>(
        _ statement: Statement, logger: Logger, timeout: Duration?
    ) async throws -> [PostgresRow] where Statement.Row == PostgresRow {
        guard eventLoop.inEventLoop else {
            return try await withTaskExecutorPreference(EventLoopExecutor(eventLoop)) {
                try await boundedRows(statement, logger: logger, timeout: timeout)
            }
        }
        // On the event loop, an open channel still has its handlers, and nothing else runs on
        // the loop before `execute` has written the request (it does not suspend before that).
        guard !isClosed else { throw SessionFailure.closed }
        let expired = Expired()
        let timer = timeout.map { timeout in
            eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
                expired.flag.store(true, ordering: .relaxed)
                let _: EventLoopFuture<Void> = close()
            }
        }
        defer { timer?.cancel() }
        do {
            var rows: [PostgresRow] = []
            for try await row in try await execute(statement, logger: logger) { rows.append(row) }
            return rows
        } catch {
            if let timeout, expired.flag.load(ordering: .relaxed) { throw SessionFailure.timedOut(timeout) }
            throw error
        }
    }
}

/// Whether a statement's deadline passed.
private final class Expired: Sendable {
    let flag = Atomic<Bool>(false)
}

/// Runs jobs on one NIO event loop: a session prefers its connection's loop as its task
/// executor, so that its statements are written on the loop and their answers resume it there.
final class EventLoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
