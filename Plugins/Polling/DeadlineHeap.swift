import HubCore

/// The deadlines of ``FeedSignals``' waits, earliest first: a binary min-heap. An entry is stale
/// once its waiter was woken or cancelled; the signals skip stale entries and rebuild the heap
/// when they outnumber the live ones.
struct DeadlineHeap {
    struct Entry {
        let at: ContinuousClock.Instant
        let id: UInt64
        let key: FeedKey
        let endpoint: String?
    }

    private(set) var entries: [Entry] = []

    init() {}

    /// A heap of `entries` in any order.
    init(entries: [Entry]) {
        self.entries = entries.sorted { $0.at < $1.at }  // a sorted array is a valid min-heap
    }

    /// The earliest entry.
    var first: Entry? { entries.first }
    var count: Int { entries.count }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the earliest entry (none when empty).
    mutating func removeFirst() {
        guard entries.count > 1 else {
            entries.removeAll(keepingCapacity: true)
            return
        }
        entries[0] = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].at < entries[smallest].at { smallest = left }
            if right < entries.count && entries[right].at < entries[smallest].at { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
