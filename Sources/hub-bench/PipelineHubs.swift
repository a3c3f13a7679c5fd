import Foundation
import HubCore
import HubEmulators
import HubPostgres
import HubSQLite
import Logging
import NIOSSL
import PostgresNIO

/// The files `hub serve` runs on in `hub-bench pipeline`: a hub.yaml with one app whose APNs
/// credentials are a generated `.p8` the emulator trusts, a publisher key and an admin token.
struct PipelineWorkspace {
    static let app = "bench.example.com"
    let directory: URL
    let key: APNSTestKey
    let publisherKey: String
    let adminToken: String

    /// A new temporary folder with the key files; ``writeConfig(store:)`` adds hub.yaml.
    static func make() throws -> PipelineWorkspace {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hub-bench-pipeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let workspace = PipelineWorkspace(
            directory: directory, key: APNSTestKey(keyID: "BENCHKEY01", teamID: "BENCHTEAM1"),
            publisherKey: "bench-publisher-" + UUID().uuidString, adminToken: "bench-admin-" + UUID().uuidString)
        try workspace.write(workspace.key.privateKeyPEM, to: "AuthKey_\(workspace.key.keyID).p8")
        try workspace.write(workspace.publisherKey, to: "publisher.key")
        try workspace.write(workspace.adminToken, to: "admin.token")
        return workspace
    }

    var sqlitePath: String { directory.appendingPathComponent("hub.sqlite").path }
    var configPath: String { directory.appendingPathComponent("hub.yaml").path }

    /// Writes hub.yaml; `postgresPoolSize` nil means SQLite, else PostgreSQL at
    /// `env:HUB_BENCH_DATABASE_URL` (never written to the file: it holds the password). `extra`:
    /// more top-level lines; `instanceID`: `server.instanceId` (a restarted hub takes its leases back).
    func writeConfig(postgresPoolSize: Int?, extra: String = "", instanceID: String? = nil) throws {
        let store =
            postgresPoolSize.map { "{ postgres: { url: env:HUB_BENCH_DATABASE_URL, poolSize: \($0) } }" }
            ?? "{ sqlite: { path: \(sqlitePath) } }"
        let instance = instanceID.map { ", instanceId: \($0)" } ?? ""
        try write(
            """
            server: { listen: "127.0.0.1:0", adminToken: file:admin.token\(instance) }
            store: \(store)
            logging: { format: text, level: notice }
            \(extra)
            # The bench measures the pipeline, not the limiter: the default 20,000/s a publisher key
            # refuses a 500-item batch whole once 40 are in flight.
            rateLimits: { publisherKey: off, userPublishes: off }
            apps:
              - id: \(Self.app)
                name: Pipeline bench
                platforms:
                  ios: { appIds: [\(APNSBench.bundleID)] }
                credentials:
                  apns: { teamId: \(key.teamID), keyId: \(key.keyID), privateKey: file:AuthKey_\(key.keyID).p8 }
                publishers: [ { name: bench, key: file:publisher.key } ]
                delivery: { mode: shoulderTap }

            """, to: "hub.yaml")
    }

    private func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// Registers `users` × `endpointsPerUser` APNs endpoints through the store's public API,
    /// `concurrency` at a time (concurrent writes share commits).
    static func populate(
        _ upsert: @escaping @Sendable (Endpoint) async throws -> Endpoint, users: Int, endpointsPerUser: Int
    ) async throws {
        let now = Date()
        let total = users * endpointsPerUser
        let counter = Shared(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    while true {
                        let index = counter.withLock { value -> Int in
                            defer { value += 1 }
                            return value
                        }
                        guard index < total else { return }
                        let (user, endpoint) = index.quotientAndRemainder(dividingBy: endpointsPerUser)
                        _ = try await upsert(
                            Endpoint(
                                id: "e\(endpoint)", appId: app, userId: "u\(user)", platform: .ios,
                                platformAppId: APNSBench.bundleID, transport: .apns,
                                token: PipelineToken.make(user: user, endpoint: endpoint),
                                attributes: ["environment": "production"],
                                registeredAt: now))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// SQLite: creates the database file and its endpoints; the store is closed when this returns.
    func populateSQLite(users: Int, endpointsPerUser: Int) async throws {
        let store = try SQLiteStore(path: sqlitePath)
        try await store.migrate()
        try await Self.populate(
            { try await store.upsertEndpoint($0) }, users: users, endpointsPerUser: endpointsPerUser)
    }

    /// PostgreSQL: migrates the (new) database and stores the endpoints.
    static func populatePostgres(url: Secret, users: Int, endpointsPerUser: Int) async throws {
        var logger = Logger(label: "bench.pipeline.postgres")
        // Errors throw; PostgresNIO's warning that the pool's run() has not begun yet is noise.
        logger.logLevel = .error
        let store = PostgresStore(configuration: try .init(url: url, poolSize: 16), logger: logger)
        let service = Task { await store.run() }
        defer { service.cancel() }
        try await store.migrate()
        try await populate({ try await store.upsertEndpoint($0) }, users: users, endpointsPerUser: endpointsPerUser)
        service.cancel()
        await service.value
    }
}

/// A database of its own on the server of the given URL, for `hub serve` instances (whose
/// hub.yaml has no schema setting: they use the database's `public` schema), dropped afterwards.
struct ThrowawayDatabase {
    let name: String
    /// The given URL with the new database's name as its path.
    let url: Secret
    private let server: PostgresConnection.Configuration

    /// How to connect to this database (the server's, with this database's name).
    var ownConfiguration: PostgresConnection.Configuration {
        var configuration = server
        configuration.database = name
        return configuration
    }

    static func create(on url: Secret) async throws -> ThrowawayDatabase {
        let parsed = try PostgresStore.Configuration(url: url)
        let tls: PostgresConnection.Configuration.TLS
        switch parsed.tls {
        case .disable: tls = .disable
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        let server = PostgresConnection.Configuration(
            host: parsed.host, port: parsed.port, username: parsed.username, password: parsed.password?.reveal(),
            database: parsed.database, tls: tls)
        let name = "hub_bench_" + String(UInt64.random(in: 1 ... .max), radix: 16)
        guard var components = URLComponents(string: url.reveal()) else {
            throw ValidationErrorText("the PostgreSQL URL (\(url.source)) cannot be parsed")
        }
        components.percentEncodedPath = "/" + name
        guard let text = components.string else {
            throw ValidationErrorText("the PostgreSQL URL (\(url.source)) cannot be rebuilt")
        }
        let database = ThrowawayDatabase(
            name: name, url: Secret(text, source: "\(url.source) → \(name)"), server: server)
        do {
            try await database.execute("CREATE DATABASE \(name)")
        } catch {
            throw ValidationErrorText(
                "could not create a database with the URL of \(url.source) (its user needs CREATEDB): "
                    + String(reflecting: error))
        }
        return database
    }

    /// Drops the database; says so on standard error when it cannot.
    func drop() async {
        do {
            try await execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        } catch {
            do {
                try await execute("DROP DATABASE IF EXISTS \(name)")  // servers before PostgreSQL 13
            } catch {
                FileHandle.standardError.write(
                    Data("hub-bench pipeline: could not drop database \(name): \(String(reflecting: error))\n".utf8))
            }
        }
    }

    private func execute(_ sql: String) async throws {
        var logger = Logger(label: "bench.pipeline.database")
        logger.logLevel = .warning
        let connection = try await PostgresConnection.connect(configuration: server, id: 1, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

/// An error whose description is its text (for failures the user can act on).
struct ValidationErrorText: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
