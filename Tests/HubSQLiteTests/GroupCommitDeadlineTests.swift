import Foundation
import GRDB
import HubCore
import HubTesting
import Synchronization
import Testing

@testable import HubSQLite

/// The hub's store deadline against SQLite's one writer: a 503 means "not stored", and a write
/// that runs in time is answered with its result however long its transaction takes. Deadlines
/// are kept on a manual clock, which the tests advance.
@Suite("Group commit under a caller's deadline")
struct GroupCommitDeadlineTests {
    /// A writer on a table `item`, and the deadlines' watchdog on a manual clock.
    private let queue: DatabaseQueue
    private let commit: GroupCommit
    private let clock = ManualClock()
    private let watchdog: DeadlineWatchdog

    init() throws {
        queue = try itemsDatabase()
        commit = GroupCommit(writer: queue)
        watchdog = DeadlineWatchdog(clock: clock)
    }

    private func names() throws -> [String] {
        try queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM item ORDER BY name") }
    }

    @Test("a write whose caller's deadline passed while it was queued is answered 503 and never runs")
    func queuedPastItsDeadline() async throws {
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        let call = Task {
            try await withDeadline(.milliseconds(100), "publish", watchdog: watchdog) {
                try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('late')") }
            }
        }
        #expect(await eventually { commit.queued == 1 && watchdog.count == 1 && clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(100))
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
        release.signal()
        try await blocker.value
        try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('next')") }
        #expect(try names() == ["next"], "the write answered 503 was not stored")
    }

    @Test("a write running when its caller's deadline passes is answered with its result, not 503")
    func runningPastItsDeadline() async throws {
        let started = Atomic<Bool>(false)
        let proceed = DispatchSemaphore(value: 0)
        let call = Task {
            try await withDeadline(.milliseconds(100), "publish", watchdog: watchdog) {
                try await commit.write { db -> Int in
                    try db.execute(sql: "INSERT INTO item VALUES ('slow')")
                    started.store(true, ordering: .releasing)
                    proceed.wait()
                    return 42
                }
            }
        }
        // A later deadline keeps the watchdog's loop alive: once it sleeps again with only that
        // one left, it has expired the call's deadline (it expires, then sleeps).
        let (never, neverEnds) = AsyncStream.makeStream(of: Void.self)
        let later = Task {
            try await withDeadline(.milliseconds(200), "later", watchdog: watchdog) {
                for await _ in never {}
            }
        }
        #expect(
            await eventually {
                started.load(ordering: .acquiring) && watchdog.count == 2 && clock.sleeperCount == 1
            })
        clock.advance(by: .milliseconds(100))
        #expect(await eventually { watchdog.count == 1 && clock.sleeperCount == 1 })
        // The deadline passed while the write ran: its result answers.
        proceed.signal()
        #expect(try await call.value == 42)
        neverEnds.finish()
        later.cancel()
        #expect(try names() == ["slow"])
    }

    @Test("a write without a deadline runs whenever it comes")
    func noDeadline() async throws {
        try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('plain')") }
        #expect(try names() == ["plain"])
    }
}
