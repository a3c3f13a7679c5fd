import Foundation
public import HubCore
public import Logging
import Metrics
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
///   relay going; calls wait for it to start, for a pooled connection and for each statement at
///   most as long as the ``Configuration`` says (``Configuration/leaseTimeout``,
///   ``Configuration/statementTimeout``), then fail as `HubError(.unavailable)`: a database that
///   goes away never holds a caller, and the pool and the relay reconnect when it is back (see
///   `PostgresStore+Sessions.swift`). ``migrate()`` works before ``run()`` (it opens a
///   connection of its own). Put the store *before* the hub in a `ServiceGroup`, so that it stops
///   last, after the hub has recorded its in-flight sends. While a table grows faster than
///   autovacuum analyzes it (a new database), ``run()`` analyzes it, so that prepared
///   statements are not left with plans made for empty tables (`PostgresStore+Statistics.swift`).
/// - Transactions: every ``HubCore/Store`` method is one transaction at `READ COMMITTED`; it has
///   committed (and, with the server's default `synchronous_commit = on`, reached the WAL on disk)
///   when the method returns. Concurrent publishes to different feeds share transactions (up to
///   32 in one, a quarter of the pool's connections at most running them; a publish the database
///   refuses is run again alone, so it fails alone): see `PostgresStore+Publish.swift`. A
///   transaction that PostgreSQL aborts for a deadlock or a serialization failure is run again,
///   up to three times.
/// - Feed order: change versions come from one sequence, and every transaction that takes one
///   first locks its feed (a transaction-level advisory lock), so a feed's versions become
///   visible in increasing order. See `PostgresStore+Versions.swift`.
/// - Deliveries: which ones a change enqueues is the `DeliveryPlanner`'s decision; the store reads
///   the user's endpoints in the change's transaction and writes the plan in one statement.
/// - Outbox: deliveries are claimed per transport lane with `FOR UPDATE SKIP LOCKED` and leased,
///   with their endpoint and notification, in one statement; each is sent by one instance while
///   all are healthy, and taken over when a crashed instance's lease ends.
/// - Errors: an unreachable database is `HubError(.unavailable)`; other failures are
///   ``PostgresStoreError``. Neither ever contains the connection URL or password.
public final class PostgresStore: Store, Service {
    public let configuration: Configuration
    /// Names this store in wake-up notifications, so that it skips its own.
    public let instanceID: String
    let logger: Logger
    /// The pools every ``HubCore/Store`` method runs on, one per configured host; the one of the
    /// host ``hosts`` chose is used (`PostgresStore+Failover.swift`).
    let clients: [PostgresClient]
    /// One connection per host that sends wake-ups to the other instances and LISTENs for theirs.
    let listeners: [PostgresClient]
    /// Which of the configured hosts is in use.
    let hosts: HostSelector
    let relayState = Mutex(RelayState())
    let relayStarts: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    /// Rung when wake-ups are queued for the other instances.
    let relayDoorbell = Bells()
    /// Opens when ``run()`` starts the pool; queries wait for it rather than lease from a
    /// stopped pool.
    let started = Latch()
    /// Opens when ``run()`` starts the wake-up connection's pool.
    let listenerStarted = Latch()
    /// Concurrent publishes, run several feeds to a transaction (`PostgresStore+Publish.swift`).
    let publishes: Batcher<PublishJob, FeedKey, PublishResult>
    /// `hub_postgres_round_trips_total`: the statements this store ran, each one round trip (made
    /// when the store is, so with the metrics system bootstrapped before it).
    let roundTrips: Counter

    /// Creates the store. Nothing connects until ``migrate()`` or ``run()``.
    /// - Parameter logger: for connection trouble and relay failures; never given the URL.
    public init(configuration: Configuration, logger: Logger = Logger(label: "hub.postgres")) {
        self.configuration = configuration
        self.instanceID = String(UInt64.random(in: 1 ... .max), radix: 16)
        self.logger = logger
        self.clients = configuration.hosts.indices.map { host in
            PostgresClient(
                configuration: configuration.client(connections: configuration.poolSize, role: "", host: host),
                backgroundLogger: logger)
        }
        self.listeners = configuration.hosts.indices.map { [instanceID] host in
            PostgresClient(
                configuration: configuration.client(connections: 1, role: "wake-ups \(instanceID)", host: host),
                backgroundLogger: logger)
        }
        self.hosts = HostSelector(configuration: configuration, logger: logger)
        self.relayStarts = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.publishes = Batcher(runners: Self.publishRunners(poolSize: configuration.poolSize), maxBatch: 32)
        self.roundTrips = Counter(label: "hub_postgres_round_trips_total")
    }

    /// How many batches of publishes run at once: a quarter of the pool (at least one), so that
    /// claims, outcomes and reads keep connections while publishes pour in.
    static func publishRunners(poolSize: Int) -> Int { max(1, poolSize / 4) }

    /// Runs the connection pool and, once ``relay(into:)`` was called, the wake-up relay, until
    /// cancelled or until graceful shutdown begins.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for client in clients {
                group.addTask {
                    self.started.open()
                    await client.run()
                }
            }
            for listener in listeners {
                group.addTask {
                    self.listenerStarted.open()
                    await listener.run()
                }
            }
            if let interval = configuration.statisticsInterval {
                group.addTask { await cancelWhenGracefulShutdown { await self.keepStatistics(every: interval) } }
            }
            group.addTask {
                guard (try? await self.listenerStarted.wait()) != nil else { return }
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
    /// Never waits forever (see `PostgresStore+Sessions.swift`).
    func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (Session) async throws -> Result
    ) async throws -> Result {
        try await retrying { try await self.withSession { session in try await Self.inTransaction(session, body) } }
    }

    /// Runs `body` (a transaction, or one statement on its own) again when PostgreSQL aborted it
    /// for a deadlock or a serialization failure, at most 3 times in all. A single statement meets
    /// the latter in any isolation level when a row it would lock or update was moved to another
    /// partition by a concurrent statement (a delivery that finished: `hub_delivery` is
    /// partitioned by state, see `PostgresStore+Partitions.swift`).
    func retrying<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch {
                guard attempt < 3, Self.isRetryable(error) else { throw error }
                attempt += 1
            }
        }
    }

    /// Runs one statement outside an explicit transaction (a single-statement read or write).
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withSession { session in try await session.rows(query) }
    }

    /// Runs `body` on a connection of its own, opened for the call and closed after it: for work
    /// that must not wait for ``run()`` (migrations at start-up). Its statements have no deadline
    /// unless `statementTimeout` is given; connecting waits at most ``dedicatedLeaseTimeout``.
    @discardableResult
    func withDedicatedConnection<Result: Sendable>(
        role: String, statementTimeout: Duration? = nil, _ body: @escaping @Sendable (Session) async throws -> Result
    ) async throws -> Result {
        let running = Latch()
        running.open()
        do {
            let host = try await hosts.target()
            let oneShot = PostgresClient(
                configuration: configuration.client(connections: 1, role: role, serverTimeouts: false, host: host),
                backgroundLogger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await oneShot.run() }
                defer { group.cancelAll() }
                return try await withSession(
                    oneShot, started: running, leaseTimeout: Self.dedicatedLeaseTimeout,
                    statementTimeout: statementTimeout, body)
            }
        } catch {
            throw Self.translate(error)
        }
    }

    /// How long ``withDedicatedConnection(role:statementTimeout:_:)`` waits for its connection:
    /// long enough for a server that is starting up, short enough that a hub never hangs at start.
    static let dedicatedLeaseTimeout = Duration.seconds(30)
}
