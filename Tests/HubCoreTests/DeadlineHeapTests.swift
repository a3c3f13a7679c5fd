import HubCore
import Testing

@Suite("Deadline heap")
struct DeadlineHeapTests {
    @Test("entries come out earliest first, whether pushed one by one or built at once")
    func order() {
        let start = ContinuousClock.now
        let offsets = (0..<500).map { _ in Int.random(in: 0..<10_000) }
        let entries = offsets.enumerated().map { index, offset in
            DeadlineHeap.Entry(at: start + .milliseconds(offset), wait: index)
        }
        var pushed = DeadlineHeap<Int>()
        for entry in entries { pushed.push(entry) }
        var built = DeadlineHeap(entries: entries)
        for var heap in [pushed, built] {
            var drained: [ContinuousClock.Instant] = []
            while let first = heap.first {
                drained.append(first.at)
                heap.removeFirst()
            }
            #expect(drained == entries.map(\.at).sorted())
            #expect(heap.count == 0)
        }
        built.removeFirst()
        #expect(built.count == entries.count - 1)
    }
}

/// A waiting room of numbered waits, to drive a ``DeadlineReaper`` by hand.
private struct Room: DeadlineWaits {
    var deadlines = DeadlineReaper<Int>()
    var waiting: [Int: ContinuousClock.Instant] = [:]

    var waiterCount: Int { waiting.count }
    func isWaiting(_ wait: Int) -> Bool { waiting[wait] != nil }
    mutating func endWait(_ wait: Int) -> Int? { waiting.removeValue(forKey: wait).map { _ in wait } }
    func waitingDeadlines() -> [DeadlineHeap<Int>.Entry] { waiting.map { .init(at: $0.value, wait: $0.key) } }

    mutating func wait(_ id: Int, until deadline: ContinuousClock.Instant) -> DeadlineSleeper? {
        waiting[id] = deadline
        return keepDeadline(id, at: deadline)
    }
}

@Suite("Deadline reaper")
struct DeadlineReaperTests {
    @Test("one sleeper at a time, for the earliest deadline of a wait still waiting")
    func sleepers() throws {
        let start = ContinuousClock.now
        var room = Room()
        let first = room.wait(1, until: start + .seconds(5))
        let later = room.wait(2, until: start + .seconds(10))
        let sooner = room.wait(3, until: start + .seconds(1))
        #expect(later == nil, "the first sleeper wakes before")
        let earlier = try #require(sooner, "an earlier deadline: a new sleeper")
        #expect(earlier.wakesAt == start + .seconds(1))
        let superseded = room.expireDeadlines(for: try #require(first), now: start + .seconds(5))
        #expect(superseded.ended.isEmpty && superseded.next == nil, "the first sleeper stops")
        // Wait 1 is woken: its deadline is stale, and the sleeper does not wake for it.
        room.waiting[1] = nil
        let atOne = room.expireDeadlines(for: earlier, now: start + .seconds(1))
        #expect(atOne.ended == [3])
        #expect(atOne.next == start + .seconds(10))
        let atTen = room.expireDeadlines(for: earlier, now: start + .seconds(10))
        #expect(atTen.ended == [2])
        #expect(atTen.next == nil)
        let next = room.wait(4, until: start + .seconds(20))
        #expect(next != nil, "nothing sleeps: a new sleeper")
    }

    @Test("deadlines of waits that ended otherwise do not pile up")
    func staleDeadlines() {
        let start = ContinuousClock.now
        var room = Room()
        _ = room.wait(0, until: start + .seconds(60))
        for id in 1...5_000 {
            _ = room.wait(id, until: start + .seconds(30) + .milliseconds(id))
            room.waiting[id] = nil
        }
        let (kept, live) = (room.deadlines.count, room.waiterCount)
        #expect(kept <= 2 * live + 1024 + 1, "\(kept) deadlines for \(live) waits")
    }
}
