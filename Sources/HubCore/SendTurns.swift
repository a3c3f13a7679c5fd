import Synchronization

/// One send at a time per key, in the order they asked: the dispatcher takes a turn per endpoint
/// for the sends of an app with badges, so that a badge read after the previous send to the
/// endpoint finished is never overtaken by it on the wire (two taps in flight to one device could
/// otherwise arrive in the other order, and the older count would stay on the icon).
final class SendTurns: Sendable {
    /// Per key with a turn taken: who waits for it, first come first served.
    private let waiting = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Waits until `key` is free, then takes it. Every call must be followed by ``release(_:)``.
    func acquire(_ key: String) async {
        let taken = waiting.withLock { waiting -> Bool in
            guard waiting[key] == nil else { return false }
            waiting[key] = []
            return true
        }
        if taken { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let free = waiting.withLock { waiting -> Bool in
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]?.append(continuation)
                return false
            }
            if free { continuation.resume() }
        }
    }

    /// Hands `key` to the next waiter, or frees it.
    func release(_ key: String) {
        let next = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
            guard var queue = waiting[key] else { return nil }
            guard !queue.isEmpty else {
                waiting[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            waiting[key] = queue
            return first
        }
        next?.resume()
    }
}
