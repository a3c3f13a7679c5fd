import HubTesting
import Synchronization
import Testing

@testable import HubPostgres

// The PostgreSQL store's group commit (`Batcher.swift`) without a database: a caller cancelled
// while its job waits in the queue (a store deadline passed) takes the job back.
@Suite("Batcher")
struct BatcherTests {
    @Test("A caller cancelled while its job is queued gets CancellationError, and the job never runs")
    func cancelledWhileQueued() async throws {
        let batcher = Batcher<String, String, String>(runners: 1, maxBatch: 8)
        let gate = Gate()
        let ran = Mutex<[[String]]>([])
        let run: Batcher<String, String, String>.Run = { jobs in
            ran.withLock { $0.append(jobs) }
            if jobs == ["first"] { await gate.pass() }
            return jobs.map { .success($0 + " done") }
        }
        // The only runner is busy with "first" until the gate opens.
        let first = Task { try await batcher.submit("first", key: "a", run: run) }
        #expect(await eventually { ran.withLock { $0 == [["first"]] } })
        let abandonedEnded = Mutex(false)
        let abandoned = Task {
            defer { abandonedEnded.withLock { $0 = true } }
            return try await batcher.submit("abandoned", key: "b", run: run)
        }
        let kept = Task { try await batcher.submit("kept", key: "c", run: run) }
        #expect(await eventually { batcher.queued == 2 })
        abandoned.cancel()
        #expect(await eventually { abandonedEnded.withLock { $0 } }, "the cancelled caller still waits")
        #expect(batcher.queued == 1)
        gate.open()
        await #expect(throws: CancellationError.self) { try await abandoned.value }
        #expect(try await first.value == "first done")
        #expect(try await kept.value == "kept done")
        #expect(ran.withLock { $0 } == [["first"], ["kept"]])
    }

    @Test("A caller cancelled before it submits never queues its job")
    func cancelledBeforeSubmitting() async throws {
        let batcher = Batcher<String, String, String>(runners: 1, maxBatch: 8)
        let ran = Mutex(0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await batcher.submit("job", key: "a") { jobs in
                ran.withLock { $0 += jobs.count }
                return jobs.map { .success($0) }
            }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(batcher.queued == 0)
        #expect(ran.withLock { $0 } == 0)
    }

    @Test("A job already in a running batch completes although its caller was cancelled")
    func cancelledWhileRunning() async throws {
        let batcher = Batcher<String, String, String>(runners: 1, maxBatch: 8)
        let gate = Gate()
        let started = Mutex(false)
        let task = Task {
            try await batcher.submit("job", key: "a") { jobs in
                started.withLock { $0 = true }
                await gate.pass()
                return jobs.map { .success($0 + " done") }
            }
        }
        #expect(await eventually { started.withLock { $0 } })
        task.cancel()
        gate.open()
        #expect(try await task.value == "job done")
    }

}
