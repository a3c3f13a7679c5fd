import Foundation
import GRDB
import Testing

@testable import HubSQLite

@Suite("Group commit")
struct GroupCommitTests {
    struct Refused: Error {}

    private func queue() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in try db.execute(sql: "CREATE TABLE item (name TEXT NOT NULL)") }
        return queue
    }

    private func names(_ queue: DatabaseQueue) throws -> Set<String> {
        try Set(queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM item") })
    }

    @Test("a job alone that throws leaves nothing behind")
    func aloneRollsBack() async throws {
        let queue = try queue()
        let commit = GroupCommit(writer: queue)
        await #expect(throws: Refused.self) {
            try await commit.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES ('half-done')")
                throw Refused()
            }
        }
        try await commit.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('next')") }
        #expect(try names(queue) == ["next"])
    }

    @Test("in a shared transaction, a job that throws fails alone; the others commit")
    func sharedFailsAlone() async throws {
        let queue = try queue()
        let commit = GroupCommit(writer: queue)
        // Hold the writer so that the jobs below queue up and share one transaction.
        let (held, hold) = AsyncStream.makeStream(of: Void.self)
        let blocker = Task {
            try await commit.write { _ in
                hold.yield()
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        var iterator = held.makeAsyncIterator()
        _ = await iterator.next()
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        try await commit.write { db in
                            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["item-\(index)"])
                            if index % 5 == 0 { throw Refused() }
                        }
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
            }
            return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        try await blocker.value
        #expect(results.count == 20)
        for (index, succeeded) in results { #expect(succeeded == (index % 5 != 0), "job \(index)") }
        #expect(try names(queue) == Set((0..<20).filter { $0 % 5 != 0 }.map { "item-\($0)" }))
    }
}
