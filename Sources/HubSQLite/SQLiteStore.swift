import Foundation
import GRDB
public import HubCore

/// The embedded default ``Store``: one SQLite database file, accessed through GRDB.
///
/// - Durability: a file store runs in WAL mode with `synchronous = FULL`, so every method that
///   returned has its transaction on disk (a publish answered with 2xx survives a power loss) —
///   except the dispatcher's bookkeeping (claims, leases, outcomes, sync times), which commits
///   without an fsync of its own: lost in a power cut, it only means a delivery is sent again.
/// - Transactions: every ``Store`` method is atomic: a read transaction, or a write in its own
///   savepoint of a group transaction that commits concurrent writes together (one fsync for many;
///   each caller is answered after the commit). Reads run concurrently with writes (file store).
/// - Schema: created or upgraded by named migrations (`v1`, …) when the store opens; ``migrate()``
///   may be called again and is then a no-op.
/// - Times: stored as seconds since 1970 (REAL). Values returned by the store are the stored ones,
///   so a time read back compares equal to the time returned by the write.
/// - Errors: a busy or locked database surfaces as `HubError(.unavailable, …)`; other errors
///   (I/O, corruption, constraint violations) propagate as GRDB's `DatabaseError`.
public final class SQLiteStore: Store {
    /// The connection (pool) all accesses go through.
    let writer: any DatabaseWriter
    /// Batches concurrent writes into shared transactions (one fsync for many publishes).
    let groupCommit: GroupCommit
    /// Copies the log into the database file off the commit path (file stores).
    let checkpointer: Checkpointer?

    /// The database file, or `nil` for an in-memory store.
    public let path: String?

    /// How long a write waits for another process's lock before failing with `.unavailable`.
    static let busyTimeout: TimeInterval = 10

    /// Opens (creating if needed) the database file at `path` and migrates it.
    ///
    /// The parent directory is created if missing (mode 0700), and the database file with mode
    /// 0600, as SQLite then makes its WAL and shared-memory files. Several processes may open the same file;
    /// they take turns to write (waiting up to ``busyTimeout`` for the lock).
    public convenience init(path: String) throws {
        try self.init(path: path, checkpointInterval: .milliseconds(200))
    }

    /// A file store whose checkpointer runs every `checkpointInterval` while commits come in.
    convenience init(path: String, checkpointInterval: Duration) throws {
        let url = URL(fileURLWithPath: path)
        // Private to the hub's user (OwnerOnlyFiles): missing folders 0700, a new database file
        // 0600 (an empty file is an empty database), and SQLite gives its WAL and shared-memory
        // files the database file's mode.
        try OwnerOnlyFiles.createDirectories(url.deletingLastPathComponent().path)
        try OwnerOnlyFiles.createFile(url.path)
        let pool = try Self.translatingErrors {
            let pool = try DatabasePool(path: url.path, configuration: Self.configuration())
            try pool.writeWithoutTransaction { db in
                // GRDB sets `synchronous = NORMAL` when it enables WAL mode; NORMAL may lose the last
                // transactions on power loss, which would break "a 2xx publish is durable".
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // Checkpoints run on the checkpointer's connection; the writer's only as a backstop.
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Checkpointer.backstopPages)")
            }
            return pool
        }
        try self.init(
            writer: pool, path: url.path, checkpointer: Checkpointer(path: url.path, interval: checkpointInterval))
    }

    /// A store in memory, for tests: fast, private to this instance, gone when released.
    public static func inMemory() throws -> SQLiteStore {
        let queue = try translatingErrors { try DatabaseQueue(configuration: configuration()) }
        return try SQLiteStore(writer: queue, path: nil)
    }

    /// Wraps an opened connection and brings its schema up to date.
    init(writer: any DatabaseWriter, path: String?, checkpointer: Checkpointer? = nil) throws {
        self.writer = writer
        self.checkpointer = checkpointer
        var afterCommit: (@Sendable () -> Void)?
        if let checkpointer { afterCommit = { checkpointer.committed() } }
        self.groupCommit = GroupCommit(writer: writer, afterCommit: afterCommit)
        self.path = path
        try Self.translatingErrors { try Self.migrator.migrate(writer) }
    }

    /// The connection settings shared by file and in-memory stores.
    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.label = "HubSQLite"
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(busyTimeout)
        // Each grouped write runs in a savepoint (``GroupCommit``), and SQLite keeps the original of
        // every page a savepoint changes in a sub-journal. With the default `temp_store` a
        // sub-journal over 64 KiB spills to a temporary file: measured at 20,000 pwrite calls
        // per second under load, more than the WAL itself. In memory it is a copy.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        return configuration
    }

    /// Creates or upgrades the schema. The initializers already did; calling again is a no-op.
    public func migrate() async throws {
        let writer = self.writer
        try await Self.translatingErrors {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Self.migrator.asyncMigrate(writer) { result in
                    continuation.resume(with: result.map { _ in () })
                }
            }
        }
    }

    /// Closes the database connections. Further use of the store fails.
    public func close() throws {
        checkpointer?.close()
        try Self.translatingErrors {
            if let pool = writer as? DatabasePool {
                try pool.close()
            } else if let queue = writer as? DatabaseQueue {
                try queue.close()
            }
        }
    }

    // MARK: Transactions

    /// Runs `updates` atomically (its own savepoint in a group transaction, see ``GroupCommit``)
    /// and returns once that transaction committed, translating busy errors. Writes whose loss in
    /// a power cut only means a delivery is sent again (outcomes, leases, sync times) pass
    /// `.relaxed`: they commit without an fsync of their own.
    func write<T: Sendable>(
        _ durability: GroupCommit.Durability = .durable, size: GroupCommit.Size = .small,
        _ updates: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        let groupCommit = self.groupCommit
        return try await Self.translatingErrors { try await groupCommit.write(durability, size: size, updates) }
    }

    /// Runs `value` in one read transaction (a snapshot), translating busy errors.
    ///
    /// The read runs on the calling thread: GRDB's asynchronous read hops through two dispatch
    /// queues and back, which cost more than the short reads of the hub's hot paths (a feed page, a
    /// notification). The reads are bounded (pages of at most 1,000 rows), and a file store's
    /// readers never wait for its writer (WAL), so a cooperative thread is held for about as long
    /// as the read's own CPU work.
    func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try Self.translatingErrors { try Self.readHere(writer, value) }
    }

    /// GRDB's synchronous read, which runs on the calling thread when a reader is free (a sync
    /// context picks it over the asynchronous overload).
    private static func readHere<T>(_ reader: any DatabaseReader, _ value: (Database) throws -> T) throws -> T {
        try reader.read(value)
    }

    // MARK: Errors

    /// Whether `error` means "the database is busy or locked; try again later".
    static func isBusy(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
    }

    /// The error the store throws for `error`: `.unavailable` for busy/locked, else `error` itself.
    static func translate(_ error: any Error) -> any Error {
        guard isBusy(error), let databaseError = error as? DatabaseError else { return error }
        return HubError(
            .unavailable,
            "The SQLite database is busy (\(databaseError.message ?? "locked")); retry the request later.")
    }

    static func translatingErrors<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw translate(error) }
    }

    static func translatingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw translate(error) }
    }

    // MARK: Inspection (tests and diagnostics)

    /// The value of a read-only pragma on the writer connection, e.g. `journal_mode`.
    func pragma(_ name: String) async throws -> String? {
        let writer = self.writer
        return try await writer.writeWithoutTransaction { db in
            guard let value = try DatabaseValue.fetchOne(db, sql: "PRAGMA \(name)") else { return nil }
            switch value.storage {
            case .null: return nil
            case .int64(let number): return String(number)
            case .double(let number): return String(number)
            case .string(let text): return text
            case .blob(let data): return data.base64EncodedString()
            }
        }
    }

    /// An error like SQLite's for a busy (`true`) or a constraint violation (`false`), to test
    /// ``translate(_:)`` without provoking one.
    static func sampleDatabaseError(busy: Bool) -> any Error {
        DatabaseError(resultCode: busy ? .SQLITE_BUSY : .SQLITE_CONSTRAINT, message: "sample")
    }

    /// The identifiers of the migrations applied to the database, in order.
    func appliedMigrations() async throws -> [String] {
        try await read { db in try Self.migrator.appliedMigrations(db) }
    }
}

// MARK: - Change versions

extension SQLiteStore {
    /// Takes the next value of the store-wide change counter. Call inside a write transaction.
    static func nextChangeVersion(_ db: Database) throws -> Int64 {
        guard
            let version = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "UPDATE changeCounter SET lastVersion = lastVersion + 1 WHERE id = 1 RETURNING lastVersion"))
        else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the changeCounter row is missing")
        }
        return version
    }

    /// Takes `count` change versions at once; returns the last (the others are the `count - 1`
    /// before it).
    static func nextChangeVersions(_ db: Database, count: Int) throws -> Int64 {
        guard
            let version = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "UPDATE changeCounter SET lastVersion = lastVersion + ? WHERE id = 1 RETURNING lastVersion"),
                arguments: [count])
        else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the changeCounter row is missing")
        }
        return version
    }
}
