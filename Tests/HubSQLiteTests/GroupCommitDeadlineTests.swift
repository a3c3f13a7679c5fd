import Foundation
import GRDB
import HubCore
import Testing

@testable import HubSQLite

/// The hub's store deadline against SQLite's one writer: a 503 means "not stored", and a write
/// that runs in time is answered with its result however long its transaction takes.
@Suite("Group commit under a caller's deadline")
struct GroupCommitDeadlineTests {
    private func names(_ queue: DatabaseQueue) throws -> [String] {
        try queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM item ORDER BY name") }
    }

    @Test("a write whose caller's deadline passed while it was queued is answered 503 and never runs")
    func queuedPastItsDeadline() async throws {
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue)
        let release = DispatchSemaphore(value: 0)
        let blocker = await hold(commit, until: release)
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(100), "publish") {
                try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('late')") }
            }
        }
        release.signal()
        try await blocker.value
        try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('next')") }
        #expect(try names(queue) == ["next"], "the write answered 503 was not stored")
    }

    @Test("a write that started before its caller's deadline is answered with its result, not 503")
    func runningPastItsDeadline() async throws {
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue)
        let started = DispatchSemaphore(value: 0)
        // The deadline is long against the job's start (a dedicated thread, at once), and the job
        // outlasts it by far more than the watchdog's lateness (up to 50 ms).
        let value = try await withDeadline(.seconds(1), "publish") {
            try await commit.write { db -> Int in
                started.signal()
                try db.execute(sql: "INSERT INTO item VALUES ('slow')")
                Thread.sleep(forTimeInterval: 1.6)
                return 42
            }
        }
        #expect(started.wait(timeout: .now()) == .success)
        #expect(value == 42)
        #expect(try names(queue) == ["slow"])
    }

    @Test("a write without a deadline runs whenever it comes")
    func noDeadline() async throws {
        let queue = try itemsDatabase()
        let commit = GroupCommit(writer: queue)
        try await commit.write { db in try db.execute(sql: "INSERT INTO item VALUES ('plain')") }
        #expect(try names(queue) == ["plain"])
    }
}
