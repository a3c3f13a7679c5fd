import Foundation
public import HubCore
import PostgresNIO

extension PostgresStore {
    /// Where the database is and how the store uses it.
    ///
    /// Build it from a connection URL (hub.yaml's `store.postgres.url`, usually `env:HUB_DATABASE_URL`):
    /// ```swift
    /// let configuration = try PostgresStore.Configuration(url: url, poolSize: 20)
    /// ```
    /// The password is kept as a ``HubCore/Secret``: ``description`` and logs never show it.
    public struct Configuration: Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var username: String
        /// Sent only during authentication.
        public var password: Secret?
        /// `nil`: the server's default (the user's name).
        public var database: String?
        public var tls: TLSMode
        /// Most connections the store opens for queries (one more is opened for wake-ups).
        public var poolSize: Int
        /// The schema that holds the hub's tables, created by ``PostgresStore/migrate()`` if
        /// missing; `nil` uses the connection's `search_path` (normally `public`). Lower-case
        /// letters, digits and `_`; one hub deployment per schema.
        public var schema: String?
        /// Shown in `pg_stat_activity`.
        public var applicationName: String
        /// The longest a store call waits for a pooled connection (or for ``PostgresStore/run()``
        /// to start) before it fails as `HubError(.unavailable)`: while the server is down, calls
        /// fail fast instead of queueing until it returns.
        public var leaseTimeout: Duration = .seconds(5)
        /// The longest one statement may run. The server cancels it then (`statement_timeout`);
        /// if no answer came two seconds later either (a server or network that vanished without
        /// closing the socket), the store closes the connection and the call fails as
        /// `unavailable`. Migrations have no limit.
        public var statementTimeout: Duration = .seconds(10)
        /// The longest a new connection's TCP connect may take.
        public var connectTimeout: Duration = .seconds(5)
        /// How long the server keeps a session that sits idle inside a transaction (its client
        /// vanished mid-transaction) before ending it and releasing its locks.
        public var idleInTransactionTimeout: Duration = .seconds(60)
        /// How often ``PostgresStore/run()`` checks whether a hub table grew far past what its
        /// statistics say, to analyze it before autovacuum does (`PostgresStore+Statistics.swift`);
        /// `nil` leaves statistics to autovacuum alone.
        public var statisticsInterval: Duration? = .seconds(2)
        /// The hub's clock (``HubCore/Hub/clock``): the dates the store writes on its own (a put-back
        /// delivery's finish time in ``PostgresStore/releaseLeases(owner:)``) and the pauses of its
        /// background work (the wake-up relay's reconnect back-off and heartbeat, the statistics
        /// checks). The limits that guard against a server that hangs in real time
        /// (``leaseTimeout``, ``statementTimeout``, ``connectTimeout``) stay on the system clock,
        /// like the hub's store deadlines. The system's by default.
        public var clock: any HubClock = SystemClock()

        /// - Throws: ``PostgresStoreError`` with code `invalidConfiguration` when the schema name
        ///   or pool size is unusable.
        public init(
            host: String, port: Int = 5432, username: String, password: Secret?, database: String?,
            tls: TLSMode = .prefer, poolSize: Int = 10, schema: String? = nil,
            applicationName: String = "notification-hub"
        ) throws(PostgresStoreError) {
            guard poolSize >= 1 else { throw .invalidConfiguration("poolSize must be at least 1, got \(poolSize)") }
            if let schema, !Self.isValidSchemaName(schema) {
                throw .invalidConfiguration(
                    "schema '\(schema)' must be 1–63 lower-case letters, digits or '_', starting with a letter or '_'")
            }
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
            self.poolSize = poolSize
            self.schema = schema
            self.applicationName = applicationName
        }

        /// Parses `postgres://user:password@host:port/database?sslmode=…` (or `postgresql://`).
        ///
        /// User, password and database are percent-decoded. Query parameters: `sslmode`
        /// (`disable`; `allow` and `prefer` = ``TLSMode/prefer``; `require`, `verify-ca` and
        /// `verify-full` = ``TLSMode/require``, which always verifies the certificate) and
        /// `application_name`. Error messages never repeat the URL.
        public init(url: Secret, poolSize: Int = 10, schema: String? = nil) throws(PostgresStoreError) {
            let text = url.reveal()
            guard let components = URLComponents(string: text),
                let scheme = components.scheme?.lowercased(), ["postgres", "postgresql"].contains(scheme)
            else { throw .invalidConfiguration("the database URL must look like postgres://user:password@host/db") }
            guard let host = components.host, !host.isEmpty else {
                throw .invalidConfiguration("the database URL has no host")
            }
            guard let username = components.user?.removingPercentEncoding, !username.isEmpty else {
                throw .invalidConfiguration("the database URL has no user name")
            }
            var tls = TLSMode.prefer
            var applicationName = "notification-hub"
            for item in components.queryItems ?? [] {
                switch (item.name, item.value ?? "") {
                case ("sslmode", "disable"): tls = .disable
                case ("sslmode", "allow"), ("sslmode", "prefer"): tls = .prefer
                case ("sslmode", "require"), ("sslmode", "verify-ca"), ("sslmode", "verify-full"): tls = .require
                case ("application_name", let name) where !name.isEmpty: applicationName = name
                default:
                    throw .invalidConfiguration(
                        "the database URL parameter '\(item.name)' is not supported (use sslmode, application_name)")
                }
            }
            let path = components.percentEncodedPath.drop { $0 == "/" }
            try self.init(
                host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host,
                port: components.port ?? 5432, username: username,
                password: components.password?.removingPercentEncoding.map { Secret($0, source: url.source) },
                database: path.isEmpty ? nil : String(path).removingPercentEncoding, tls: tls, poolSize: poolSize,
                schema: schema, applicationName: applicationName)
        }

        /// The connection target without the password, safe to log.
        public var description: String {
            "postgres://\(username)@\(host):\(port)/\(database ?? "") (tls: \(tls), pool: \(poolSize)"
                + (schema.map { ", schema: \($0))" } ?? ")")
        }

        static func isValidSchemaName(_ name: String) -> Bool {
            guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 63 else { return false }
            func isLetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || scalar == "_" }
            return isLetter(first) && name.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
        }

        /// The postgres-nio client settings for a pool of `connections` named `role`.
        ///
        /// The pool's own keep-alive is off: its query can hang forever on a connection the server
        /// just closed (see `PostgresStore+Sessions.swift`) and would then hold the pool's `run()`
        /// at shutdown. Idle connections are closed after a minute instead, and a dead one fails
        /// its next statement at once (closed socket) or at the statement deadline (vanished peer).
        /// - Parameter serverTimeouts: whether the sessions get `statement_timeout` and
        ///   `idle_in_transaction_session_timeout` (not for migrations). They are startup
        ///   parameters: a connection pooler in front of the server must pass them on or ignore
        ///   them (PgBouncer: `ignore_startup_parameters`); the store's own deadlines hold either way.
        func client(connections: Int, role: String, serverTimeouts: Bool = true) -> PostgresClient.Configuration {
            var client = PostgresClient.Configuration(
                host: host, port: port, username: username, password: password?.reveal(), database: database,
                tls: tls.client)
            client.options.maximumConnections = connections
            client.options.connectTimeout = connectTimeout
            client.options.keepAliveBehavior = nil
            // The server keeps 63 bytes of it: shorten the name, never the role.
            let name =
                role.isEmpty ? applicationName : "\(applicationName.prefix(max(0, 60 - role.utf8.count))) [\(role)]"
            var parameters = [("application_name", name)]
            if let schema { parameters.append(("search_path", schema)) }
            if serverTimeouts {
                parameters.append(("statement_timeout", "\(Self.milliseconds(statementTimeout))"))
                parameters.append(
                    ("idle_in_transaction_session_timeout", "\(Self.milliseconds(idleInTransactionTimeout))"))
            }
            client.options.additionalStartupParameters = parameters
            return client
        }

        static func milliseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }
    }

    /// Whether connections use TLS.
    public struct TLSMode: Sendable, Hashable, CustomStringConvertible {
        private enum Mode: Hashable { case disable, prefer, require }
        private let mode: Mode
        /// Plain TCP (a database on the same host or a private network).
        public static let disable = TLSMode(mode: .disable)
        /// TLS when the server offers it, with certificate verification; plain TCP otherwise.
        public static let prefer = TLSMode(mode: .prefer)
        /// TLS with certificate verification, or no connection.
        public static let require = TLSMode(mode: .require)

        public var description: String {
            switch mode {
            case .disable: "disable"
            case .prefer: "prefer"
            case .require: "require"
            }
        }

        var client: PostgresClient.Configuration.TLS {
            switch mode {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        }
    }
}
