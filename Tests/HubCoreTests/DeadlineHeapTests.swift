import HubCore
import Testing

@testable import HubPolling

@Suite("Deadline heap")
struct DeadlineHeapTests {
    @Test("entries come out earliest first, whether pushed one by one or built at once")
    func order() {
        let start = ContinuousClock.now
        let key = FeedKey(appId: "notes.contoso.com", userId: "alice")
        let offsets = (0..<500).map { _ in Int.random(in: 0..<10_000) }
        let entries = offsets.enumerated().map { index, offset in
            DeadlineHeap.Entry(at: start + .milliseconds(offset), id: UInt64(index), key: key, endpoint: nil)
        }
        var pushed = DeadlineHeap()
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
