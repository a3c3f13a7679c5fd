import GRDB
import GRDBSQLite

/// A prepared GRDB statement bound and stepped through SQLite's C API: for the writer's hottest
/// statement (the delivery upsert, hundreds of parameters), where GRDB's `StatementArguments`
/// boxed every value and cost the writer thread more than SQLite's own work. Bind every
/// parameter, then ``run(_:)`` once; GRDB never executes the statement in between (its SQL is
/// used only here), so its own bookkeeping of arguments is not needed.
struct RawStatement {
    private let statement: Statement
    private var handle: OpaquePointer { statement.sqliteStatement }

    /// Takes `statement` (reset, its bindings cleared) for binding.
    init(_ statement: Statement) {
        self.statement = statement
        sqlite3_reset(statement.sqliteStatement)
        sqlite3_clear_bindings(statement.sqliteStatement)
    }

    /// The destructor that makes SQLite copy a bound text.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    func bind(_ value: String, at index: Int32) {
        var value = value
        value.withUTF8 { utf8 in
            _ = sqlite3_bind_text(
                handle, index, UnsafeRawPointer(utf8.baseAddress!).assumingMemoryBound(to: CChar.self),
                Int32(utf8.count), Self.transient)
        }
    }

    func bind(_ value: String?, at index: Int32) {
        if let value { bind(value, at: index) } else { sqlite3_bind_null(handle, index) }
    }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(handle, index, value) }

    func bind(_ value: Double, at index: Int32) { sqlite3_bind_double(handle, index, value) }

    func bind(_ value: Double?, at index: Int32) {
        if let value { bind(value, at: index) } else { sqlite3_bind_null(handle, index) }
    }

    /// Steps the statement to its end, calling `row` for each row it returns; resets it after.
    /// - Throws: `DatabaseError` with SQLite's code and message when a step fails.
    func run(_ row: (RawStatement) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW: try row(self)
            case SQLITE_DONE: return
            default:
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))), sql: statement.sql)
            }
        }
    }

    /// The current row's column `index` as an integer.
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// The current row's column `index` as text (empty when NULL).
    func string(_ index: Int32) -> String {
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        return String(cString: text)
    }
}
