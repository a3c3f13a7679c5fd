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
        /// The servers to connect to, in the order they are tried (libpq's multi-host URL):
        /// each new connection goes to the first that answers and suits
        /// ``targetSessionAttributes`` (see `PostgresStore+Failover.swift`). Never empty.
        public var hosts: [ServerAddress]
        /// Which of ``hosts`` the store may use: after a failover, the pool and the wake-up
        /// connection move to whichever server is the primary now.
        public var targetSessionAttributes: TargetSessionAttributes
        /// The first of ``hosts``; setting it replaces them all with one.
        public var host: String {
            get { hosts[0].host }
            set { hosts = [ServerAddress(host: newValue, port: port)] }
        }
        /// The port of the first of ``hosts``; setting it replaces them all with one.
        public var port: Int {
            get { hosts[0].port }
            set { hosts = [ServerAddress(host: host, port: newValue)] }
        }
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
        /// The time span of one partition of finished deliveries (`PostgresStore+Partitions.swift`).
        /// The sweep drops a partition once its whole span is past the retention, so a finished
        /// delivery leaves between the retention and the retention plus this span after it may.
        /// One day by default; whole seconds.
        public var retentionPartition: Duration = .seconds(86_400)
        /// How many partitions of ``retentionPartition`` the sweep keeps created from now on. They
        /// should cover the longest lifetime of a notification (`limits.maxLifetime`, 30 days) and a
        /// little more: a finished delivery of a notification that expires later waits in the
        /// default partition until its partition is created (it is moved then).
        public var retentionPartitionsAhead: Int = 40
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
            self.hosts = [ServerAddress(host: host, port: port)]
            self.targetSessionAttributes = .any
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
        /// Several hosts may be given, as libpq takes them: `postgres://user@h1:5432,h2:5432/db`
        /// (an IPv6 address in brackets, `[::1]:5432`; a host without a port uses 5432). User,
        /// password and database are percent-decoded. Query parameters: `sslmode` (`disable`;
        /// `allow` and `prefer` = ``TLSMode/prefer``; `require`, `verify-ca` and `verify-full` =
        /// ``TLSMode/require``, which always verifies the certificate), `application_name` and
        /// `target_session_attrs` (`read-write`, `primary` or `any`; the default is `read-write`
        /// with several hosts and `any` with one: the hub writes, so `read-only`, `standby` and
        /// `prefer-standby` are refused). Error messages never repeat the URL.
        public init(url: Secret, poolSize: Int = 10, schema: String? = nil) throws(PostgresStoreError) {
            let text = url.reveal()
            guard let parsed = Self.splitHosts(text) else {
                throw .invalidConfiguration("the database URL must look like postgres://user:password@host/db")
            }
            let hosts = try Self.parseHosts(parsed.hosts)
            guard let components = URLComponents(string: parsed.rest),
                let scheme = components.scheme?.lowercased(), ["postgres", "postgresql"].contains(scheme)
            else { throw .invalidConfiguration("the database URL must look like postgres://user:password@host/db") }
            guard let username = components.user?.removingPercentEncoding, !username.isEmpty else {
                throw .invalidConfiguration("the database URL has no user name")
            }
            var tls = TLSMode.prefer
            var applicationName = "notification-hub"
            var attributes: TargetSessionAttributes?
            for item in components.queryItems ?? [] {
                switch (item.name, item.value ?? "") {
                case ("sslmode", "disable"): tls = .disable
                case ("sslmode", "allow"), ("sslmode", "prefer"): tls = .prefer
                case ("sslmode", "require"), ("sslmode", "verify-ca"), ("sslmode", "verify-full"): tls = .require
                case ("application_name", let name) where !name.isEmpty: applicationName = name
                case ("target_session_attrs", let value):
                    attributes = try TargetSessionAttributes(parameter: value)
                default:
                    throw .invalidConfiguration(
                        "the database URL parameter '\(item.name)' is not supported"
                            + " (use sslmode, application_name, target_session_attrs)")
                }
            }
            let path = components.percentEncodedPath.drop { $0 == "/" }
            try self.init(
                host: hosts[0].host, port: hosts[0].port, username: username,
                password: components.password?.removingPercentEncoding.map { Secret($0, source: url.source) },
                database: path.isEmpty ? nil : String(path).removingPercentEncoding, tls: tls, poolSize: poolSize,
                schema: schema, applicationName: applicationName)
            self.hosts = hosts
            self.targetSessionAttributes = attributes ?? (hosts.count > 1 ? .readWrite : .any)
        }

        /// Splits `scheme://userinfo@h1:p1,h2:p2/rest` into its host list and the same URL with
        /// one placeholder host (which `URLComponents` parses); `nil` without `scheme://`.
        static func splitHosts(_ text: String) -> (hosts: Substring, rest: String)? {
            guard let schemeEnd = text.range(of: "://") else { return nil }
            let afterScheme = text[schemeEnd.upperBound...]
            let authorityEnd = afterScheme.firstIndex { "/?#".contains($0) } ?? afterScheme.endIndex
            let authority = afterScheme[..<authorityEnd]
            let userInfoEnd = authority.lastIndex(of: "@")
            let hosts = userInfoEnd.map { authority[authority.index(after: $0)...] } ?? authority
            let userInfo = userInfoEnd.map { String(authority[...$0]) } ?? ""
            return (hosts, String(text[..<schemeEnd.upperBound]) + userInfo + "host" + afterScheme[authorityEnd...])
        }

        /// Parses `h1:5432,[::1]:5433,h3`: error messages name the item (1-based) and what to fix.
        static func parseHosts(_ list: Substring) throws(PostgresStoreError) -> [ServerAddress] {
            guard !list.isEmpty else { throw .invalidConfiguration("the database URL has no host") }
            var endpoints: [ServerAddress] = []
            for (index, item) in list.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
                let number = index + 1
                var host: Substring
                var portText: Substring?
                if item.hasPrefix("[") {
                    guard let close = item.firstIndex(of: "]") else {
                        throw .invalidConfiguration(
                            "host \(number) of the database URL lacks the ']' of its IPv6 address")
                    }
                    host = item[item.index(after: item.startIndex)..<close]
                    let after = item[item.index(after: close)...]
                    if !after.isEmpty {
                        guard after.hasPrefix(":") else {
                            throw .invalidConfiguration(
                                "host \(number) of the database URL has '\(after)' after its IPv6 address (use [address]:port)"
                            )
                        }
                        portText = after.dropFirst()
                    }
                } else if let colon = item.firstIndex(of: ":") {
                    host = item[..<colon]
                    portText = item[item.index(after: colon)...]
                } else {
                    host = item
                }
                guard !host.isEmpty else {
                    throw .invalidConfiguration(
                        "host \(number) of the database URL is empty (hosts are h1:port,h2:port)")
                }
                var port = 5432
                if let portText {
                    guard let value = Int(portText), portText.allSatisfy(\.isASCII), (1...65535).contains(value) else {
                        throw .invalidConfiguration(
                            "host \(number) of the database URL (\(host)) has port '\(portText)'; a port is 1–65535")
                    }
                    port = value
                }
                guard let decoded = String(host).removingPercentEncoding else {
                    throw .invalidConfiguration("host \(number) of the database URL is not valid percent-encoding")
                }
                endpoints.append(ServerAddress(host: decoded, port: port))
            }
            return endpoints
        }

        /// The connection target without the password, safe to log.
        public var description: String {
            "postgres://\(username)@\(hosts.map(\.description).joined(separator: ","))/\(database ?? "")"
                + " (tls: \(tls), pool: \(poolSize)"
                + (hosts.count > 1 || targetSessionAttributes != .any ? ", target: \(targetSessionAttributes)" : "")
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
        func client(
            connections: Int, role: String, serverTimeouts: Bool = true, host: Int = 0
        ) -> PostgresClient.Configuration {
            var client = PostgresClient.Configuration(
                host: hosts[host].host, port: hosts[host].port, username: username, password: password?.reveal(),
                database: database,
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

    /// One server of ``Configuration/hosts``.
    public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
        /// A name or an address (an IPv6 address without brackets).
        public var host: String
        public var port: Int
        /// - Parameters:
        ///   - host: a name or an address (an IPv6 address without brackets).
        ///   - port: the server's TCP port.
        public init(host: String, port: Int = 5432) {
            self.host = host
            self.port = port
        }
        /// `host:port`, an IPv6 address in brackets.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Which servers the store may use (the URL's `target_session_attrs`, as in libpq).
    public enum TargetSessionAttributes: Sendable, Hashable, CustomStringConvertible {
        /// The first server that accepts the connection (no check).
        case any
        /// A server that is not in recovery (a primary, not a streaming standby).
        case primary
        /// A server that is not in recovery and whose sessions are not read-only by default.
        case readWrite

        init(parameter value: String) throws(PostgresStoreError) {
            switch value {
            case "any": self = .any
            case "primary": self = .primary
            case "read-write": self = .readWrite
            case "read-only", "standby", "prefer-standby":
                throw .invalidConfiguration(
                    "target_session_attrs=\(value) would connect the hub to a read-only server; it writes on every"
                        + " publish: use read-write (the default with several hosts), primary or any")
            default:
                throw .invalidConfiguration(
                    "target_session_attrs '\(value)' is not known (use read-write, primary or any)")
            }
        }

        public var description: String {
            switch self {
            case .any: "any"
            case .primary: "primary"
            case .readWrite: "read-write"
            }
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
