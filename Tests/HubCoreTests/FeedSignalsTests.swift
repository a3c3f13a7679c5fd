import HubCore
import Synchronization
import Testing

@Suite("feed wake-ups")
struct FeedSignalsTests {
    let key = FeedKey(appId: "a.contoso.com", userId: "alice")

    @Test("a wake-up between ticket and wait is not lost")
    func wakeBeforeWait() async {
        let signals = FeedSignals()
        let ticket = signals.ticket()
        signals.wake(key)
        #expect(await signals.wait(key, endpoint: nil, after: ticket, timeout: .seconds(30)))
    }

    @Test("a wait without a wake-up times out")
    func timeout() async {
        let signals = FeedSignals()
        #expect(await !signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .milliseconds(20)))
        #expect(signals.waiterCount == 0)
    }

    @Test("a waiting request is woken by a later wake-up")
    func wakesWaiter() async {
        let signals = FeedSignals()
        let key = key
        async let woken = signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(30))
        let registered = await eventuallyTrue { signals.waiterCount == 1 }
        #expect(registered)
        signals.wake(key)
        #expect(await woken)
    }

    @Test("an endpoint's waiter wakes for its endpoint only, not for other endpoints or other users")
    func endpointScoped() async {
        let signals = FeedSignals()
        let ticket = signals.ticket()
        signals.wake(key, endpoint: "phone")
        signals.wake(FeedKey(appId: "a.contoso.com", userId: "bob"), endpoint: "tablet")
        #expect(await !signals.wait(key, endpoint: "tablet", after: ticket, timeout: .milliseconds(20)))
        #expect(await signals.wait(key, endpoint: "phone", after: ticket, timeout: .seconds(30)))
    }

    @Test("a wake-up ends every wait on its feed and leaves the waits on other feeds")
    func wakesOnlyItsOwnWaiters() async {
        let signals = FeedSignals()
        let key = key
        let other = FeedKey(appId: "a.contoso.com", userId: "bob")
        let ticket = signals.ticket()
        let mine = (0..<3).map { _ in
            Task { await signals.wait(key, endpoint: nil, after: ticket, timeout: .seconds(60)) }
        }
        let theirs = (0..<2).map { _ in
            Task { await signals.wait(other, endpoint: nil, after: ticket, timeout: .seconds(60)) }
        }
        #expect(await eventuallyTrue { signals.waiterCount == 5 })
        signals.wake(key)
        for task in mine { #expect(await task.value) }
        #expect(signals.waiterCount == 2)
        for task in theirs { task.cancel() }
        for task in theirs { #expect(await task.value == false) }
        #expect(signals.waiterCount == 0)
    }

    @Test("the relay is called at the same stack depth after many wake-ups (no thunks pile up around it)")
    func relayDoesNotGrow() {
        let signals = FeedSignals()
        let depths = Mutex<[UInt]>([])
        signals.setRelay { _, _ in depths.withLock { $0.append(stackAddress()) } }
        for _ in 0..<5_000 { signals.wake(key) }
        let recorded = depths.withLock { $0 }
        #expect(recorded.count == 5_000)
        guard let first = recorded.first, let last = recorded.last else { return }
        // Each wake-up used to wrap the stored closure in two more thunks: the 5,000th call ran
        // 10,000 frames deeper than the first (a stack overflow after ~60,000 in a release build).
        let drift = first > last ? first - last : last - first
        #expect(drift < 16 * 1024, "the relay ran \(drift) bytes deeper after 5,000 wake-ups")
    }

    @Test("cancelling a waiting task ends the wait at once")
    func cancellation() async {
        let signals = FeedSignals()
        let key = key
        let task = Task { await signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(60)) }
        _ = await eventuallyTrue { signals.waiterCount == 1 }
        task.cancel()
        #expect(await task.value == false)
        #expect(signals.waiterCount == 0)
    }
}

func eventuallyTrue(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<1000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// The address of a local of this frame: how deep the stack is at the caller.
@inline(never)
func stackAddress() -> UInt {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}
