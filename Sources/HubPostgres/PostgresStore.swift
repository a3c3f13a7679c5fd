import Foundation
public import HubCore
public import Logging
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// The ``HubCore/Store`` for several hub instances behind one PostgreSQL database (scale-out).
///
/// ```swift
/// let store = PostgresStore(configuration: try .init(url: databaseURL, poolSize: 20), logger: logger)
/// store.relay(into: signals)            // long-polls wake across instances
/// try await store.migrate()             // safe when several instances start at once
/// let group = ServiceGroup(services: [store, hub, server], logger: logger)
/// ```
///
/// - Running: the store is a `Service`. Its ``run()`` keeps the connection pool and the wake-up
///   relay going; queries wait until it starts. ``migrate()`` works before ``run()`` (it opens a
///   connection of its own). Put the store *before* the hub in a `ServiceGroup`, so that it stops
///   last, after the hub has recorded its in-flight sends.
/// - Transactions: every ``HubCore/Store`` method is one transaction at `READ COMMITTED`; it has
///   committed (and, with the server's default `synchronous_commit = on`, reached the WAL on disk)
///   when the method returns. A transaction that PostgreSQL aborts for a deadlock or a
///   serialization failure is run again, up to three times.
/// - Feed order: change versions come from one sequence, and every transaction that takes one
///   first locks its feed (a transaction-level advisory lock), so a feed's versions become
///   visible in increasing order. See `PostgresStore+Versions.swift`.
/// - Outbox: deliveries are claimed with `FOR UPDATE SKIP LOCKED` and leased; each is sent by one
///   instance while all are healthy, and taken over when a crashed instance's lease ends.
/// - Errors: an unreachable database is `HubError(.unavailable)`; other failures are
///   ``PostgresStoreError``. Neither ever contains the connection URL or password.
public final class PostgresStore: Store, Service {
    public let configuration: Configuration
    /// Names this store in wake-up notifications, so that it skips its own.
    public let instanceID: String
    let logger: Logger
    /// The pool every ``HubCore/Store`` method runs on.
    let client: PostgresClient
    /// One connection that sends wake-ups to the other instances and LISTENs for theirs.
    let listener: PostgresClient
    let relayState = Mutex(RelayState())
    let relayStarts: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    /// Rung when wake-ups are queued for the other instances.
    let relayDoorbell = FeedSignals()
    /// Opens when ``run()`` starts the pool; queries wait for it rather than lease from a
    /// stopped pool.
    let started = Latch()
    /// Opens when ``run()`` starts the wake-up connection's pool.
    let listenerStarted = Latch()

    /// Creates the store. Nothing connects until ``migrate()`` or ``run()``.
    /// - Parameter logger: for connection trouble and relay failures; never given the URL.
    public init(configuration: Configuration, logger: Logger = Logger(label: "hub.postgres")) {
        self.configuration = configuration
        self.instanceID = String(UInt64.random(in: 1 ... .max), radix: 16)
        self.logger = logger
        self.client = PostgresClient(
            configuration: configuration.client(connections: configuration.poolSize, role: ""),
            backgroundLogger: logger)
        self.listener = PostgresClient(
            configuration: configuration.client(connections: 1, role: "wake-ups \(instanceID)"),
            backgroundLogger: logger)
        self.relayStarts = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Runs the connection pool and, once ``relay(into:)`` was called, the wake-up relay, until
    /// cancelled or until graceful shutdown begins.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                self.started.open()
                await self.client.run()
            }
            group.addTask {
                self.listenerStarted.open()
                await self.listener.run()
            }
            group.addTask {
                await self.listenerStarted.wait()
                await cancelWhenGracefulShutdown {
                    for await _ in self.relayStarts.stream {
                        await self.runRelay()
                        return
                    }
                }
            }
        }
    }

    // MARK: Transactions

    /// Runs `body` in one transaction on a pooled connection and commits it; rolls back when
    /// `body` throws. Deadlocks and serialization failures run `body` again (at most 3 times).
    func transaction<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        await started.wait()
        var attempt = 1
        while true {
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    try await body(connection)
                }
            } catch {
                let translated = Self.translate(error)
                guard attempt < 3, Self.isRetryable(translated) else { throw translated }
                attempt += 1
            }
        }
    }

    /// Runs one statement outside an explicit transaction (a single-statement read or write).
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        await started.wait()
        do {
            return try await client.query(query, logger: logger).collect()
        } catch {
            throw Self.translate(error)
        }
    }

    /// Runs `body` on a connection of its own, opened for the call and closed after it: for work
    /// that must not wait for ``run()`` (migrations at start-up).
    @discardableResult
    func withDedicatedConnection<Result: Sendable>(
        role: String, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let oneShot = PostgresClient(
            configuration: configuration.client(connections: 1, role: role), backgroundLogger: logger)
        do {
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await oneShot.run() }
                defer { group.cancelAll() }
                return try await oneShot.withConnection { connection in try await body(connection) }
            }
        } catch {
            throw Self.translate(error)
        }
    }
}

extension PostgresConnection {
    /// Runs `query` in the current transaction and collects its rows.
    @discardableResult
    func rows(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }
}

/// A one-way door: ``wait()`` returns once ``open()`` was called (at once after that).
final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        if state.withLock({ $0.open }) { return }
        await withCheckedContinuation { continuation in
            let opened = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if opened { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
