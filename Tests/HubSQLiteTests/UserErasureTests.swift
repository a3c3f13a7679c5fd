import Foundation
import GRDB
import HubCore
import HubTesting
import Testing

@testable import HubSQLite

/// After an erasure, no column of any table holds the user ID: the tables and their columns are
/// read from the schema itself (`sqlite_master`, `pragma_table_info`), so a table added later is
/// searched too.
@Suite("SQLite user erasure")
struct UserErasureTests {
    @Test("no table holds the user ID after an erasure; the neighbour's rows stay")
    func noTableHoldsTheUser() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.databasePath)
        try await store.migrate()
        try await StoreConformance.populateUserData(store)
        let subject = StoreConformance.erasureSubject.userId
        let neighbour = StoreConformance.erasureNeighbour.userId

        let before = try await Self.columnsHolding(subject, in: store)
        // The search finds the user where the fixture put it, so an empty answer later means something.
        for table in [
            "notification", "endpoint", "delivery", "userTag", "broadcastUser", "broadcastChunk", "broadcast",
        ] {
            #expect(
                before.contains { $0.hasPrefix(table + ".") }, "before the erasure, \(table) names the user: \(before)")
        }
        let neighbourBefore = try await Self.columnsHolding(neighbour, in: store)

        let erased = try await store.eraseUser(StoreConformance.erasureSubject, at: Date())
        #expect(erased.notifications == 2 && erased.endpoints == 2 && erased.broadcasts == 1)
        let left = try await Self.columnsHolding(subject, in: store)
        #expect(left == [], "no column names the erased user: \(left)")
        let neighbourAfter = try await Self.columnsHolding(neighbour, in: store)
        #expect(
            neighbourAfter.isSuperset(of: neighbourBefore.subtracting(["broadcast.cursor"])),
            "the neighbour's rows stay: \(neighbourBefore) → \(neighbourAfter)")
        try store.close()
    }

    /// `table.column` of every column of every table whose value, as text, contains `text`.
    static func columnsHolding(_ text: String, in store: SQLiteStore) async throws -> Set<String> {
        try await store.read { db in
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            var found: Set<String> = []
            for table in tables {
                let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
                for column in columns {
                    let count = try Int.fetchOne(
                        db,
                        sql: """
                            SELECT count(*) FROM "\(table)" WHERE instr(CAST("\(column)" AS TEXT), ?) > 0
                            """, arguments: [text])
                    if (count ?? 0) > 0 { found.insert("\(table).\(column)") }
                }
            }
            return found
        }
    }
}
