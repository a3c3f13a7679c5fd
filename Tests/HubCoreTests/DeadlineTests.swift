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
}

/// The deadlines that fired, in order.
private final class Fired: Sendable {
    private let list = Mutex<[Int]>([])
    var values: [Int] { list.withLock { $0 } }
    func append(_ value: Int) { list.withLock { $0.append(value) } }
}
