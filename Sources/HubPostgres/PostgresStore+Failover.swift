import Foundation
import HubCore
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

// Several servers, as libpq takes them (`postgres://h1:5432,h2:5432/hub?target_session_attrs=…`):
// a primary and its streaming standbys, of which any may be the primary after a failover.
//
// postgres-nio's pool connects to one host, so the store keeps one pool (and one wake-up
// connection) per host and a `HostSelector` that says which of them is in use:
// - Finding the server: the hosts are tried in order, each with a connection of its own
//   (connect, then, unless `target_session_attrs=any`, `SELECT pg_is_in_recovery(),
//   current_setting('transaction_read_only')`); the first that suits is used until a call on it
//   fails as unavailable (connection refused or lost, lease timed out, or the server turned
//   read-only: SQLSTATE 25006), and then the next call looks again. One search runs at a time;
//   calls made meanwhile wait for it, at most ``PostgresStore/Configuration/leaseTimeout`` (each
//   host gets twice the connect timeout, also when it accepts the TCP connection and then says
//   nothing). When no host suits, the search fails as
//   `HubError(.unavailable)` naming each host and why it was refused (never the password), and
//   calls fail at once with that error for `HostSelector.retryInterval` before the next search:
//   while no primary is reachable the HTTP API answers 503 with `Retry-After`, at once.
// - Every new connection of a pool (and every wake-up connection) is checked the same way before
//   its first use, so that a server that came back as a standby is never written to.
// With one host and no `target_session_attrs` none of this runs: the store behaves as before.

/// Which of the configured hosts the store uses now.
final class HostSelector: Sendable {
    /// How long a failed search is answered from memory before the next one.
    static let retryInterval = Duration.milliseconds(500)

    let configuration: PostgresStore.Configuration
    let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var current: Int?
        var search: Task<Int, any Error>?
        var failure: (error: HubError, until: ContinuousClock.Instant)?
        /// Connections checked before their first use, by pool name and connection ID.
        var checked: [String: Set<PostgresConnection.ID>] = [:]
    }

    init(configuration: PostgresStore.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.state = Mutex(State())
    }

    /// Whether there is anything to choose or check.
    var isActive: Bool { configuration.hosts.count > 1 || configuration.targetSessionAttributes != .any }

    /// The index of the host to use, searching the hosts when none is known.
    /// - Throws: `HubError(.unavailable)` when no host suits.
    func target() async throws -> Int {
        guard isActive else { return 0 }
        enum Next {
            case use(Int)
            case fail(HubError)
            case wait(Task<Int, any Error>)
        }
        let next = state.withLock { state -> Next in
            if let current = state.current { return .use(current) }
            if let search = state.search { return .wait(search) }
            if let failure = state.failure, ContinuousClock.now < failure.until { return .fail(failure.error) }
            let search = Task { try await self.search() }
            state.search = search
            return .wait(search)
        }
        switch next {
        case .use(let index): return index
        case .fail(let error): throw error
        case .wait(let search):
            // The search goes on (and is remembered) past this caller's wait.
            do {
                return try await withDeadline(configuration.leaseTimeout, "the search for a PostgreSQL server") {
                    try await search.value
                }
            } catch let error as DeadlineExceeded {
                throw HubError(.unavailable, "The PostgreSQL servers did not answer (\(error)); retry later.")
            }
        }
    }

    /// Notes that a call on host `index` failed with `error` (already translated): an
    /// unavailable server makes the next call search the hosts again.
    func failed(host index: Int, error: any Error) {
        guard isActive, (error as? HubError)?.code == .unavailable else { return }
        state.withLock { state in
            if state.current == index { state.current = nil }
        }
    }

    /// Checks a connection of the pool `pool` to host `index` before its first use.
    /// - Throws: `HubError(.unavailable)` (and closes the connection) when the server does not suit.
    func check(_ session: Session, pool: String, host index: Int) async throws {
        guard configuration.targetSessionAttributes != .any else { return }
        let key = "\(pool) \(index)"
        if state.withLock({ $0.checked[key]?.contains(session.connection.id) ?? false }) { return }
        if let refusal = try await refusal(session.rows(Self.checkQuery)) {
            session.close()
            state.withLock { state in
                if state.current == index { state.current = nil }
            }
            throw HubError(
                .unavailable,
                "The PostgreSQL server \(configuration.hosts[index]) \(refusal) (target_session_attrs="
                    + "\(configuration.targetSessionAttributes)); retry later.")
        }
        state.withLock { state in
            // Connection IDs only grow; forgetting old ones costs one more check each.
            if state.checked[key, default: []].count > 10_000 { state.checked[key] = [] }
            state.checked[key, default: []].insert(session.connection.id)
        }
    }

    static let checkQuery: PostgresQuery = "SELECT pg_is_in_recovery(), current_setting('transaction_read_only')"

    /// Why a server whose answer to ``checkQuery`` is `rows` does not suit; `nil` when it does.
    func refusal(_ rows: [PostgresRow]) throws -> String? {
        guard let row = rows.first else { return "did not say whether it is a standby" }
        let (inRecovery, readOnly) = try row.decode((Bool, String).self)
        if inRecovery { return "is a standby (in recovery)" }
        if configuration.targetSessionAttributes == .readWrite, readOnly == "on" {
            return "is read-only (default_transaction_read_only)"
        }
        return nil
    }

    /// Tries the hosts in order; remembers and returns the first that suits.
    private func search() async throws -> Int {
        var reasons: [String] = []
        for (index, endpoint) in configuration.hosts.enumerated() {
            do {
                // A server that accepts the TCP connection and then says nothing (a frozen host)
                // must not hold the search: connecting, authenticating and the check together
                // get twice the connect timeout.
                let refusal = try await withDeadline(configuration.connectTimeout * 2, "connecting") {
                    try await self.probe(index)
                }
                if let refusal {
                    reasons.append("\(endpoint) \(refusal)")
                    continue
                }
                state.withLock { state in
                    state.current = index
                    state.search = nil
                    state.failure = nil
                }
                logger.notice("using PostgreSQL server", metadata: ["host": "\(endpoint)", "tried": "\(reasons)"])
                return index
            } catch {
                reasons.append("\(endpoint) \(Self.reason(error))")
            }
        }
        let error = HubError(
            .unavailable,
            "No PostgreSQL server suits target_session_attrs=\(configuration.targetSessionAttributes): "
                + reasons.joined(separator: "; ") + "; retry later.")
        state.withLock { state in
            state.search = nil
            state.failure = (error, ContinuousClock.now + Self.retryInterval)
        }
        logger.warning("no usable PostgreSQL server", metadata: ["tried": "\(reasons.joined(separator: "; "))"])
        throw error
    }

    /// Connects to host `index` on a connection of its own and says why it does not suit, if it does not.
    private func probe(_ index: Int) async throws -> String? {
        let endpoint = configuration.hosts[index]
        let tls: PostgresConnection.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var connectionConfiguration = PostgresConnection.Configuration(
            host: endpoint.host, port: endpoint.port, username: configuration.username,
            password: configuration.password?.reveal(), database: configuration.database, tls: tls)
        connectionConfiguration.options.connectTimeout = TimeAmount(configuration.connectTimeout)
        connectionConfiguration.options.additionalStartupParameters = [
            ("application_name", "\(configuration.applicationName.prefix(50)) [probe]")
        ]
        let connection = try await PostgresConnection.connect(
            configuration: connectionConfiguration, id: 0, logger: logger)
        // Closed (and its close awaited) on every path: postgres-nio requires it before release.
        do {
            let refusal =
                configuration.targetSessionAttributes == .any
                ? nil
                : try await refusal(
                    connection.boundedRows(Self.checkQuery, logger: logger, timeout: configuration.connectTimeout))
            try? await connection.close()
            return refusal
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// Why connecting failed, without the URL or password.
    static func reason(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "refused the connection (\(message))" }
            if let underlying = error.underlying { return "could not be reached (\(underlying))" }
            return "could not be reached (\(error.code))"
        }
        if let error = error as? HubError { return "failed (\(error.message))" }
        if let error = error as? DeadlineExceeded { return "did not answer (\(error))" }
        return "could not be reached (\(error))"
    }
}
