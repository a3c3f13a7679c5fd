import Foundation
import GRDB
import HubTesting
import Synchronization
import Testing

@testable import HubSQLite

@Suite("Group commit")
struct GroupCommitTests {
    struct Refused: Error {}

    private func queue(_ configuration: Configuration = Configuration()) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(configuration: configuration)
        try queue.write { db in try db.execute(sql: "CREATE TABLE item (name TEXT NOT NULL)") }
        return queue
    }

    /// Starts a job that holds the commit thread for 0.2 s; returns once it holds it, so that the
    /// writes that follow queue up and share the next transaction.
    private func holdWriter(_ commit: GroupCommit) async -> Task<Void, any Error> {
        let (held, hold) = AsyncStream.makeStream(of: Void.self)
        let blocker = Task {
            try await commit.write { _ in
                hold.yield()
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        var iterator = held.makeAsyncIterator()
        _ = await iterator.next()
        return blocker
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
        let blocker = await holdWriter(commit)
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

    @Test("a shared transaction whose jobs all succeed runs them without savepoints")
    func sharedWithoutSavepoints() async throws {
        let statements = Mutex<[String]>([])
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            db.trace(options: .statement) { event in
                if case .statement(let statement) = event { statements.withLock { $0.append(statement.sql) } }
            }
        }
        let queue = try queue(configuration)
        let commit = GroupCommit(writer: queue)
        let blocker = await holdWriter(commit)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await commit.write { db in
                        try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["item-\(index)"])
                    }
                }
            }
            try await group.waitForAll()
        }
        try await blocker.value
        #expect(try names(queue) == Set((0..<20).map { "item-\($0)" }))
        let executed = statements.withLock { $0 }
        #expect(executed.filter { $0.hasPrefix("BEGIN") }.count < 20, "the jobs shared transactions: \(executed)")
        #expect(!executed.contains { $0.uppercased().contains("SAVEPOINT") }, "no savepoint: \(executed)")
    }

    /// The `synchronous` level the job's transaction commits with (1 NORMAL, 2 FULL).
    @Sendable private static func level(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
    }

    @Test("relaxed jobs commit without an fsync; a durable job, alone or in their batch, with one")
    func durability() async throws {
        let queue = try queue()
        let commit = GroupCommit(writer: queue)
        #expect(try await commit.write(.relaxed, Self.level) == 1)
        #expect(try await commit.write(.relaxed, Self.level) == 1)
        #expect(try await commit.write(.durable, Self.level) == 2)
        #expect(try await commit.write { try Self.level($0) } == 2, "durable unless said otherwise")
        #expect(try await commit.write(.relaxed, Self.level) == 1)

        // A batch of relaxed jobs with one durable job among them commits with an fsync.
        let (held, hold) = AsyncStream.makeStream(of: Void.self)
        let blocker = Task {
            try await commit.write(.relaxed) { _ in
                hold.yield()
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        var iterator = held.makeAsyncIterator()
        _ = await iterator.next()
        let levels = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10 {
                group.addTask { try await commit.write(index == 7 ? .durable : .relaxed, Self.level) }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        try await blocker.value
        #expect(levels == Array(repeating: 2, count: 10))
    }

    @Test("the commit thread ends when idle and starts again with the next write")
    func idleThreadEnds() async throws {
        let queue = try queue()
        let commit = GroupCommit(writer: queue, idleTimeout: .milliseconds(20))
        try await commit.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('first')") }
        #expect(await eventually(timeout: .seconds(5)) { !commit.isRunning })
        try await commit.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('second')") }
        #expect(try names(queue) == ["first", "second"])
        // Writes racing the thread's end are never stranded.
        for round in 0..<50 {
            try await Task.sleep(for: .milliseconds(round % 3 == 0 ? 21 : 1))
            try await commit.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["race-\(round)"])
            }
        }
        #expect(try names(queue).count == 52)
    }
}
