import HubTesting
import Testing

@testable import HubCore

/// ``Bells``: the wake-ups of the hub's own loops (dispatcher lanes, lease keeper, recorder).
@Suite("bells of the hub's loops")
struct BellsTests {
    let poke = Bell("poke")
    let slot = Bell("slot")

    @Test("a ring wakes the waiters of its bell only; a ring after the ticket ends a wait at once")
    func ring() async {
        let bells = Bells()
        let ticket = bells.ticket()
        async let poked = bells.wait(poke, after: ticket, timeout: .seconds(30))
        async let slotted = bells.wait(slot, after: ticket, timeout: .seconds(30))
        #expect(await eventually { bells.waiterCount == 2 })
        bells.ring(poke)
        #expect(await poked)
        #expect(bells.waiterCount == 1, "the other bell's waiter still waits")
        bells.ring(slot)
        #expect(await slotted)

        let before = bells.ticket()
        bells.ring(poke)
        #expect(await bells.wait(poke, after: before, timeout: .seconds(30)), "rung between ticket and wait")
        #expect(bells.waiterCount == 0)
    }

    @Test("a wait ends at its deadline on the bells' clock, not woken; one task sleeps for all waits")
    func deadline() async {
        let clock = ManualClock()
        let bells = Bells(clock: clock)
        let ticket = bells.ticket()
        async let short = bells.wait(poke, after: ticket, timeout: .seconds(1))
        async let long = bells.wait(slot, after: ticket, timeout: .seconds(10))
        #expect(await eventually { bells.waiterCount == 2 && clock.sleeperCount == 1 })
        clock.advance(by: .seconds(1))
        #expect(await short == false)
        #expect(await eventually { bells.waiterCount == 1 && clock.sleeperCount == 1 })
        clock.advance(by: .seconds(9))
        #expect(await long == false)
        #expect(bells.waiterCount == 0)
    }

    @Test("a cancelled wait ends at once, not woken")
    func cancellation() async {
        let bells = Bells()
        let wait = Task { await bells.wait(poke, after: bells.ticket(), timeout: .seconds(30)) }
        #expect(await eventually { bells.waiterCount == 1 })
        wait.cancel()
        #expect(await wait.value == false)
        #expect(bells.waiterCount == 0)
    }
}
