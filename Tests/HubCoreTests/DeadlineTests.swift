import Foundation
import HubTesting
import Synchronization
import Testing

@testable import HubCore

@Suite("deadlines: one shared watchdog")
struct DeadlineTests {
    @Test("a call that ignores cancellation is abandoned at its deadline, not before")
    func abandonsAHungCall() async throws {
        let clock = ManualClock()
        let watchdog = DeadlineWatchdog(clock: clock)
        let call = Task {
            try await withDeadline(.milliseconds(200), "hung", watchdog: watchdog) {
                // Ignores cancellation, like a query on a dead connection.
                await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            }
        }
        #expect(await eventually { watchdog.count == 1 && clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(199))
        // The watchdog woke, found nothing due and sleeps again: the call still waits.
        #expect(await eventually { clock.sleeperCount == 1 })
        #expect(watchdog.count == 1)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
        #expect(watchdog.count == 0)
    }

    @Test("a call that answers returns its value, and the watchdog forgets it")
    func forgetsFinishedCalls() async throws {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<500 {
                group.addTask { try await withDeadline(.seconds(30), "quick") { index } }
            }
            var sum = 0
            for try await value in group { sum += value }
            #expect(sum == (0..<500).reduce(0, +))
        }
        // Only the calls of concurrently running tests may still be watched; none of these.
        #expect(DeadlineWatchdog.shared.count < 500)
    }

    @Test("deadlines of different lengths each fire, none before its time")
    func mixedDeadlines() async throws {
        let clock = ManualClock()
        let watchdog = DeadlineWatchdog(clock: clock)
        let fired = Fired()
        let calls = Task {
            await withTaskGroup(of: Void.self) { group in
                for milliseconds in [1500, 100, 700] {
                    group.addTask {
                        let result: Void? = try? await withDeadline(
                            .milliseconds(milliseconds), "hung \(milliseconds)", watchdog: watchdog
                        ) {
                            try await Task.sleep(for: .seconds(30))  // a call that hangs, for the deadline to cut
                        }
                        #expect(result == nil)
                        fired.append(milliseconds)
                    }
                }
            }
        }
        #expect(await eventually { watchdog.count == 3 && clock.sleeperCount == 1 })
        var elapsed = 0
        for (moment, expected) in [(99, []), (100, [100]), (699, [100]), (700, [100, 700]), (1499, [100, 700])] {
            clock.advance(by: .milliseconds(moment - elapsed))
            elapsed = moment
            // The watchdog took the step (woke, expired what was due, sleeps again).
            #expect(await eventually { clock.sleeperCount == 1 && fired.values == expected }, "at \(moment) ms")
            #expect(fired.values == expected, "at \(moment) ms")
        }
        clock.advance(by: .milliseconds(1))
        await calls.value
        #expect(fired.values == [100, 700, 1500])
    }

    @Test("a held deadline waits for the call's answer; a released one answers at once; an ended call cannot be held")
    func holds() async throws {
        let clock = ManualClock()
        let watchdog = DeadlineWatchdog(clock: clock)
        let seen = HoldsSeen()
        let held = Task {
            try await withDeadline(.milliseconds(100), "committing", watchdog: watchdog) {
                let hold = try #require(DeadlineHold.current)
                #expect(hold.hold())
                return await withCheckedContinuation { continuation in seen.add(hold, answer: continuation) }
            }
        }
        #expect(await eventually { seen.count == 1 && clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(200))
        #expect(await eventually { watchdog.count == 0 }, "the deadline passed")
        seen.answer(7)
        #expect(try await held.value == 7, "the held call's own answer, not DeadlineExceeded")

        let released = Task {
            try await withDeadline(.milliseconds(100), "rolled back", watchdog: watchdog) {
                let hold = try #require(DeadlineHold.current)
                #expect(hold.hold())
                seen.add(hold, answer: nil)
                try await Task.sleep(for: .seconds(30))
            }
        }
        #expect(await eventually { seen.count == 2 && clock.sleeperCount >= 1 })
        clock.advance(by: .milliseconds(200))
        #expect(await eventually { watchdog.count == 0 })
        let second = seen.holds[1]
        #expect(!second.hasEnded, "held past its deadline")
        second.release()
        await #expect(throws: DeadlineExceeded.self) { try await released.value }
        #expect(second.hasEnded && !second.hold(), "an ended call cannot be held again")
        #expect(!DeadlineHold(combining: seen.holds).hold(), "a combined hold needs every one")
    }
}

/// The holds the calls of a test took, and the answer one of them waits for.
private final class HoldsSeen: Sendable {
    private let state = Mutex<(holds: [DeadlineHold], answer: CheckedContinuation<Int, Never>?)>(([], nil))
    var holds: [DeadlineHold] { state.withLock { $0.holds } }
    var count: Int { holds.count }
    func add(_ hold: DeadlineHold, answer: CheckedContinuation<Int, Never>?) {
        state.withLock { state in
            state.holds.append(hold)
            if let answer { state.answer = answer }
        }
    }
    func answer(_ value: Int) { state.withLock { $0.answer }?.resume(returning: value) }
}

/// The deadlines that fired, in order.
private final class Fired: Sendable {
    private let list = Mutex<[Int]>([])
    var values: [Int] { list.withLock { $0 } }
    func append(_ value: Int) { list.withLock { $0.append(value) } }
}
