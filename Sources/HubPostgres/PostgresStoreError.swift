import HubCore
import PostgresNIO

/// A failure of the PostgreSQL store that is not "the database is unreachable" (that one is a
/// `HubError` with code `unavailable`, which the HTTP API answers with 503).
///
/// Messages carry the server's message and SQLSTATE but never the connection URL or password.
public struct PostgresStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in kinds an operator can act on.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The URL, pool size or schema name is unusable; fix the configuration.
        public static let invalidConfiguration = Code(rawValue: "invalid-configuration")
        /// The server refused a statement (constraint, permission, …); see ``sqlState``.
        public static let server = Code(rawValue: "server")
        /// The schema is newer than this build (another instance was upgraded first).
        public static let schemaTooNew = Code(rawValue: "schema-too-new")
        /// A stored value could not be read back; see ``underlying``.
        public static let corruptRow = Code(rawValue: "corrupt-row")
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    /// The server's five-character error code (`23505` unique violation, …), when it sent one.
    public var sqlState: String?
    /// The postgres-nio error behind this one.
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, sqlState: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.underlying = underlying
    }

    static func invalidConfiguration(_ message: String) -> PostgresStoreError {
        PostgresStoreError(.invalidConfiguration, message)
    }

    public var description: String {
        "\(code): \(message)" + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
    }
}

extension PostgresStore {
    /// SQLSTATEs after which the whole transaction is simply run again: serialization failure
    /// and deadlock (PostgreSQL aborted this transaction so that another one could proceed).
    static let retryableStates: Set<String> = ["40001", "40P01"]

    /// The error the store throws for an error of postgres-nio.
    ///
    /// Transaction wrappers are unwrapped; connection-level failures (the pool cannot connect,
    /// the server closed the connection, the server is shutting down or out of connections)
    /// become `HubError(.unavailable)`; server errors become ``PostgresStoreError`` with their
    /// SQLSTATE. Anything else (already translated) passes through.
    static func translate(_ error: any Error) -> any Error {
        if let transaction = error as? PostgresTransactionError {
            return translate(transaction.closureError ?? transaction.commitError ?? transaction.beginError ?? error)
        }
        if let decoding = error as? PostgresDecodingError {
            return PostgresStoreError(
                .corruptRow, "column \(decoding.columnName) could not be read (\(decoding.code))", underlying: decoding)
        }
        // The pool's own errors (circuit breaker tripped, pool shut down) live in postgres-nio's
        // internal `_ConnectionPoolModule`; recognise them by type rather than import that module.
        if String(reflecting: type(of: error)).hasPrefix("_ConnectionPoolModule.") {
            return HubError(
                .unavailable, "The PostgreSQL connection pool cannot serve queries (\(error)); retry later.")
        }
        if let failure = error as? SessionFailure { return failure.hubError }
        guard let error = error as? PSQLError else { return error }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState]
            let message = error.serverInfo?[.message] ?? "the server reported an error"
            // 08: connection exception, 53: insufficient resources, 57P: operator intervention
            // (the server is shutting down or starting), 57014: the statement outlived
            // `statement_timeout` (the database is overloaded or a lock is held too long).
            // 25006: a write on a read-only server (a primary that became a standby; see
            // `PostgresStore+Failover.swift`, the next call looks for the primary again).
            if let state,
                state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state == "57014"
                    || state == "25006"
            {
                return HubError(.unavailable, "The PostgreSQL database is unavailable (\(message)); retry later.")
            }
            return PostgresStoreError(.server, message, sqlState: state, underlying: error)
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .poolClosed, .queryCancelled,
            .clientClosedConnection, .sslUnsupported:
            return HubError(.unavailable, "The PostgreSQL database is unreachable (\(error.code)); retry later.")
        default:
            return PostgresStoreError(.server, "postgres-nio failed: \(error.code)", underlying: error)
        }
    }

    /// Whether running the transaction again may succeed.
    static func isRetryable(_ error: any Error) -> Bool {
        guard let state = (error as? PostgresStoreError)?.sqlState else { return false }
        return retryableStates.contains(state)
    }
}
