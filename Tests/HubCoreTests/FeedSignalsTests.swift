import HubCore
import HubPolling
import HubTesting
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
        let registered = await eventually { signals.waiterCount == 1 }
        #expect(registered)
        signals.wake(key)
        #expect(await woken)
    }

    @Test("shutDown ends every wait at once, not woken, and every later wait returns at once")
    func shutDownEndsWaits() async {
        let signals = FeedSignals()
        let key = key
        async let feedWait = signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(300))
        async let endpointWait = signals.wait(
            FeedKey(appId: "a.contoso.com", userId: "bob"), endpoint: "tablet", after: signals.ticket(),
            timeout: .seconds(300))
        #expect(await eventually { signals.waiterCount == 2 })
        signals.shutDown()
        #expect(signals.isShutDown)
        #expect(await !feedWait)
        #expect(await !endpointWait)
        #expect(signals.waiterCount == 0)
        #expect(await !signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(300)))
        #expect(signals.waiterCount == 0)
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
        #expect(await eventually { signals.waiterCount == 5 })
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

    @Test("a change wakes every waiter of the feed but the endpoint that made it")
    func everyoneExcept() async {
        let signals = FeedSignals()
        let key = key
        let ticket = signals.ticket()
        let waits = ["phone", "tablet", "laptop"].map { endpoint in
            Task { await signals.wait(key, endpoint: endpoint, after: ticket, timeout: .seconds(60)) }
        }
        let anonymous = Task { await signals.wait(key, endpoint: nil, after: ticket, timeout: .seconds(60)) }
        let otherFeed = Task {
            await signals.wait(
                FeedKey(appId: "a.contoso.com", userId: "bob"), endpoint: "phone", after: ticket, timeout: .seconds(60))
        }
        #expect(await eventually { signals.waiterCount == 5 })
        #expect(signals.wake(key, .everyone(except: "phone")) == 3)
        for woken in [waits[1], waits[2], anonymous] { #expect(await woken.value) }
        #expect(signals.waiterCount == 2, "the phone and bob's phone still wait")
        waits[0].cancel()
        otherFeed.cancel()
        for ended in [waits[0], otherFeed] { #expect(await ended.value == false) }
    }

    @Test("a change between ticket and wait counts for every endpoint but the one it excepted")
    func everyoneBeforeWait() async {
        let signals = FeedSignals()
        let ticket = signals.ticket()
        signals.wake(key, .everyone(except: "phone"))
        #expect(await signals.wait(key, endpoint: "tablet", after: ticket, timeout: .seconds(30)))
        #expect(await signals.wait(key, endpoint: nil, after: ticket, timeout: .seconds(30)))
        #expect(await !signals.wait(key, endpoint: "phone", after: ticket, timeout: .milliseconds(20)))
        // Two changes: the earlier one did not except the phone, so it counts for the phone too.
        let second = signals.ticket()
        signals.wake(key, .everyone(except: "tablet"))
        signals.wake(key, .everyone(except: "phone"))
        #expect(await signals.wait(key, endpoint: "phone", after: second, timeout: .seconds(30)))
    }

    @Test("waits end at their own deadlines, a short one registered after a long one included")
    func deadlines() async {
        let signals = FeedSignals()
        let key = key
        let long = Task { await signals.wait(key, endpoint: "a", after: signals.ticket(), timeout: .seconds(60)) }
        #expect(await eventually { signals.waiterCount == 1 })
        let start = ContinuousClock.now
        let shortWaits = (0..<50).map { index in
            Task {
                await signals.wait(
                    key, endpoint: "s\(index)", after: signals.ticket(), timeout: .milliseconds(100 + index))
            }
        }
        for wait in shortWaits { #expect(await wait.value == false) }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(100) && elapsed < .seconds(30), "ended after \(elapsed)")
        #expect(signals.waiterCount == 1, "the 60 s wait still waits")
        long.cancel()
        #expect(await long.value == false)
        #expect(signals.waiterCount == 0)
    }

    @Test("many short-lived waits leave no timer or deadline behind: the next waits still time out")
    func manyWokenWaits() async {
        let signals = FeedSignals()
        let key = key
        for round in 0..<3_000 {
            let ticket = signals.ticket()
            async let woken = signals.wait(key, endpoint: "e\(round % 3)", after: ticket, timeout: .seconds(60))
            while signals.waiterCount == 0 { await Task.yield() }
            signals.wake(key, .everyone(except: nil))
            #expect(await woken)
        }
        #expect(signals.waiterCount == 0)
        #expect(await !signals.wait(key, endpoint: "late", after: signals.ticket(), timeout: .milliseconds(50)))
    }

    @Test("the newest committed version: known after a commit, forgotten on a change from another instance")
    func versions() {
        let signals = FeedSignals()
        #expect(!signals.isCurrent(key, version: 100), "nothing is known before a commit")
        signals.committed(key, version: 7)
        signals.committed(key, version: 5)
        #expect(signals.isCurrent(key, version: 7) && signals.isCurrent(key, version: 8))
        #expect(!signals.isCurrent(key, version: 6))
        #expect(!signals.isCurrent(FeedKey(appId: "a.contoso.com", userId: "bob"), version: 7))
        signals.receive(key, .everyone(except: nil))
        #expect(!signals.isCurrent(key, version: 7), "another instance changed the feed")
        signals.committed(key, version: 9)
        signals.committed(key, version: nil)
        #expect(!signals.isCurrent(key, version: 9), "a change of unknown version")
        signals.committed(key, version: 10)
        signals.forgetVersions()
        #expect(!signals.isCurrent(key, version: 10), "a relay that lost its connection forgets them all")
    }

    @Test("a wake-up from another instance reaches the local waiters of its audience and is not relayed back")
    func receive() async {
        let signals = FeedSignals()
        let relayed = Mutex(0)
        signals.setRelay { _, _ in relayed.withLock { $0 += 1 } }
        let ticket = signals.ticket()
        signals.receive(key, .endpoint("tablet"))
        #expect(await signals.wait(key, endpoint: "tablet", after: ticket, timeout: .seconds(30)))
        #expect(relayed.withLock { $0 } == 0)
        signals.wake(key, .everyone(except: nil))
        #expect(relayed.withLock { $0 } == 1)
    }

    @Test("cancelling a waiting task ends the wait at once")
    func cancellation() async {
        let signals = FeedSignals()
        let key = key
        let task = Task { await signals.wait(key, endpoint: nil, after: signals.ticket(), timeout: .seconds(60)) }
        _ = await eventually { signals.waiterCount == 1 }
        task.cancel()
        #expect(await task.value == false)
        #expect(signals.waiterCount == 0)
    }
}

/// The address of a local of this frame: how deep the stack is at the caller.
@inline(never)
func stackAddress() -> UInt {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}
