import Foundation
import GRDB
import HubTesting
import Synchronization
import Testing

@testable import HubSQLite

/// An in-memory database with a table `item (name)` for the jobs to write to.
func itemsDatabase(_ configuration: Configuration = Configuration()) throws -> DatabaseQueue {
    let queue = try DatabaseQueue(configuration: configuration)
    try queue.write { db in try db.execute(sql: "CREATE TABLE item (name TEXT NOT NULL)") }
    return queue
}

/// Holds the commit thread until `release` is signalled; returns once it holds it.
func hold(_ commit: GroupCommit, until release: DispatchSemaphore) async -> Task<Void, any Error> {
    let (held, signal) = AsyncStream.makeStream(of: Void.self)
    let blocker = Task {
        try await commit.write { _ in
            signal.yield()
            release.wait()
        }
    }
    var iterator = held.makeAsyncIterator()
    _ = await iterator.next()
    return blocker
}

/// Runs `job(0)` … `job(count - 1)` while another job holds the commit thread, and lets the thread
/// go only once all of them are queued, so they share the next transaction whatever the machine's
/// load; their results, in the order they finished.
private func queuedBehindHold<T: Sendable>(
    _ commit: GroupCommit, count: Int, _ job: @escaping @Sendable (Int) async throws -> T
) async throws -> [T] {
    let release = DispatchSemaphore(value: 0)
    let blocker = await hold(commit, until: release)
    let results = try await withThrowingTaskGroup(of: T.self) { group in
        for index in 0..<count { group.addTask { try await job(index) } }
        #expect(await eventually { commit.queued == count }, "queued: \(commit.queued) of \(count)")
        release.signal()
        return try await group.reduce(into: [T]()) { $0.append($1) }
    }
    try await blocker.value
    return results
}

@Suite("Group commit")
struct GroupCommitTests {
    struct Refused: Error {}

    private func names(_ queue: DatabaseQueue) throws -> Set<String> {
        try Set(queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM item") })
    }

    @Test("the commit thread carries its name (Linux refuses names over 15 bytes)")
    func commitThreadName() async throws {
        let commit = GroupCommit(writer: try itemsDatabase())
        let name = try await commit.write { _ in try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name.trimmingCharacters(in: .newlines) == GroupCommit.threadName)
        #expect(Checkpointer.threadName.utf8.count <= 15)
    }

    @Test("a job alone that throws leaves nothing behind")
    func aloneRollsBack() async throws {
        let queue = try itemsDatabase()
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
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue)
        let results = try await queuedBehindHold(commit, count: 20) { index in
            do {
                try await commit.write { db in
                    try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["item-\(index)"])
                    if index % 5 == 0 { throw Refused() }
                }
                return (index, true)
            } catch {
                return (index, false)
            }
        }.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
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
        let queue = try itemsDatabase(configuration)
        let commit = GroupCommit(writer: queue)
        _ = try await queuedBehindHold(commit, count: 20) { index in
            try await commit.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["item-\(index)"])
            }
        }
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
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue)
        #expect(try await commit.write(.relaxed, Self.level) == 1)
        #expect(try await commit.write(.relaxed, Self.level) == 1)
        #expect(try await commit.write(.durable, Self.level) == 2)
        #expect(try await commit.write { try Self.level($0) } == 2, "durable unless said otherwise")
        #expect(try await commit.write(.relaxed, Self.level) == 1)

        // A batch of relaxed jobs with one durable job among them commits with an fsync.
        let levels = try await queuedBehindHold(commit, count: 10) { index in
            try await commit.write(index == 7 ? .durable : .relaxed, Self.level)
        }
        #expect(levels == Array(repeating: 2, count: 10))
    }

    @Test("the commit thread ends when idle and starts again with the next write")
    func idleThreadEnds() async throws {
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue, idleTimeout: .milliseconds(20))
        try await commit.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('first')") }
        #expect(await eventually { !commit.isRunning })
        try await commit.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('second')") }
        #expect(try names(queue) == ["first", "second"])
        // Writes racing the thread's end are never stranded.
        for round in 0..<50 {
            // Real time on purpose: pauses just past and well within the 20 ms idle timeout race its end.
            try await Task.sleep(for: .milliseconds(round % 3 == 0 ? 21 : 1))
            try await commit.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["race-\(round)"])
            }
        }
        #expect(try names(queue).count == 52)
    }
}

@Suite("Group commit: order and budget")
struct GroupCommitSchedulingTests {
    /// What the jobs of a test ran, in order.
    final class Ran: Sendable {
        private let names = Mutex<[String]>([])
        func append(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test("queued relaxed jobs (claims, outcomes) run before queued durable ones")
    func relaxedFirst() async throws {
        let commit = GroupCommit(writer: try itemsDatabase())
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let ran = Ran()
        var writes: [Task<Void, any Error>] = []
        for index in 0..<5 {
            writes.append(Task { try await commit.write(.durable) { _ in ran.append("durable-\(index)") } })
            #expect(await eventually { commit.queued == index + 1 })
        }
        writes.append(Task { try await commit.write(.relaxed) { _ in ran.append("relaxed") } })
        #expect(await eventually { commit.queued == 6 })
        release.signal()
        try await blocker.value
        for write in writes { try await write.value }
        #expect(ran.all == ["relaxed"] + (0..<5).map { "durable-\($0)" })
    }

    @Test("a crowd of relaxed jobs never keeps a queued durable one out of the next transaction")
    func relaxedCrowdDoesNotStarve() async throws {
        let commits = Atomic<Int>(0)
        let commit = GroupCommit(
            writer: try itemsDatabase(), cycleBudget: .milliseconds(10),
            afterCommit: { commits.add(1, ordering: .relaxed) })
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let ran = Ran()
        let durable = Task {
            try await commit.write(.durable) { _ in ran.append("durable after \(commits.load(ordering: .relaxed))") }
        }
        #expect(await eventually { commit.queued == 1 })
        var relaxed: [Task<Void, any Error>] = []
        for _ in 0..<200 {
            // Each job spends 1 ms of real time: together they overrun the transaction's time budget.
            relaxed.append(Task { try await commit.write(.relaxed) { _ in Thread.sleep(forTimeInterval: 0.001) } })
        }
        #expect(await eventually { commit.queued == 201 })
        release.signal()
        try await blocker.value
        try await durable.value
        for write in relaxed { try await write.value }
        // The blocker's transaction committed; the durable job ran in the next one, after at most
        // half a batch of relaxed jobs, although they spent that transaction's budget many times.
        #expect(ran.all == ["durable after 1"])
    }

    @Test("a transaction stops taking jobs after its time budget; the rest commit in the next ones")
    func budgetSplitsLongBatches() async throws {
        let commits = Ran()
        let database = try itemsDatabase()
        let commit = GroupCommit(
            writer: database, cycleBudget: .milliseconds(50),
            afterCommit: { commits.append("commit") })
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        var writes: [Task<Void, any Error>] = []
        for index in 0..<6 {
            writes.append(
                Task {
                    try await commit.write { db in
                        Thread.sleep(forTimeInterval: 0.03)  // a slow job: the time budget under test is real time
                        try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["slow-\(index)"])
                    }
                })
        }
        #expect(await eventually { commit.queued == 6 })
        release.signal()
        try await blocker.value
        for write in writes { try await write.value }
        // The blocker's transaction, then at most two 30 ms jobs per 50 ms transaction.
        #expect(commits.all.count >= 1 + 3)
        #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") } == 6)
    }

    @Test("no window: jobs queued behind a transaction in progress commit as soon as it ends, however few")
    func noWindow() async throws {
        let commits = Atomic<Int>(0)
        let database = try itemsDatabase()
        let commit = GroupCommit(writer: database, afterCommit: { commits.add(1, ordering: .relaxed) })
        // Seven callers writing at the same time, behind a transaction in progress: too few to share
        // an fsync well, the company a fixed window waited for (with a long window, for good).
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let done = Ran()
        var writes: [Task<Void, any Error>] = []
        for index in 0..<7 {
            writes.append(
                Task {
                    try await commit.write { db in
                        try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["job-\(index)"])
                    }
                    done.append("job-\(index)")
                })
        }
        #expect(await eventually { commit.queued == 7 })
        release.signal()
        try await blocker.value
        #expect(await eventually(timeout: .seconds(10)) { done.all.count == 7 })
        guard done.all.count == 7 else { return }
        for write in writes { try await write.value }
        // The held transaction, then one for the seven: nothing waited for more.
        #expect(commits.load(ordering: .relaxed) == 2)
        #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") } == 7)
    }

    @Test("queued small writes commit in a transaction of their own, before the batches queued with them")
    func smallWritesApartFromBatches() async throws {
        let commits = Ran()
        let commit = GroupCommit(writer: try itemsDatabase(), afterCommit: { commits.append("commit") })
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let ran = Ran()
        let batch = Task {
            try await commit.write(size: .batch) { _ in ran.append("batch after \(commits.all.count)") }
        }
        #expect(await eventually { commit.queued == 1 })
        let small = Task { try await commit.write { _ in ran.append("small after \(commits.all.count)") } }
        #expect(await eventually { commit.queued == 2 })
        release.signal()
        try await blocker.value
        try await batch.value
        try await small.value
        // The blocker's transaction, then the small write alone although it came last, then the batch.
        #expect(ran.all == ["small after 1", "batch after 2"])
    }

    @Test("a batch passed over for small writes takes the next transaction, though more small writes wait")
    func batchesTakeTurns() async throws {
        let commit = GroupCommit(writer: try itemsDatabase())
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let ran = Ran()
        let batch = Task { try await commit.write(size: .batch) { _ in ran.append("batch") } }
        #expect(await eventually { commit.queued == 1 })
        let (started, signal) = AsyncStream.makeStream(of: Void.self)
        let releaseFirst = DispatchSemaphore(value: 0)
        let first = Task {
            try await commit.write { _ in
                ran.append("small-1")
                signal.yield()
                releaseFirst.wait()
            }
        }
        #expect(await eventually { commit.queued == 2 })
        release.signal()
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        // small-1's transaction runs and passed the batch over; another small write comes.
        let second = Task { try await commit.write { _ in ran.append("small-2") } }
        #expect(await eventually { commit.queued == 2 })
        releaseFirst.signal()
        try await blocker.value
        try await first.value
        try await batch.value
        try await second.value
        #expect(ran.all == ["small-1", "batch", "small-2"])
    }
}
