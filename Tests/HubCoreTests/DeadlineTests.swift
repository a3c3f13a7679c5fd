import Foundation
import Testing

@testable import HubCore

@Suite("deadlines: one shared watchdog")
struct DeadlineTests {
    @Test("a call that ignores cancellation is abandoned at its deadline")
    func abandonsAHungCall() async throws {
        let started = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(200), "hung") {
                // Ignores cancellation, like a query on a dead connection.
                await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(200))
        // The body never returns: any bound proves the call was abandoned; a wide one survives a
        // stalled machine.
        #expect(elapsed < .seconds(5), "\(elapsed)")
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
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for milliseconds in [1500, 100, 700] {
                group.addTask {
                    let result = try? await withDeadline(.milliseconds(milliseconds), "hung \(milliseconds)") {
                        try await Task.sleep(for: .seconds(30))
                    }
                    let elapsed = ContinuousClock.now - started
                    #expect(result == nil)
                    #expect(elapsed >= .milliseconds(milliseconds), "\(milliseconds) ms fired after \(elapsed)")
                    #expect(elapsed < .milliseconds(milliseconds) + .seconds(5), "\(milliseconds) ms: \(elapsed)")
                }
            }
        }
    }
}
