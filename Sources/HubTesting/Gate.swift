import Synchronization

/// Holds whoever calls ``pass()`` until ``open()`` is called, and lets everyone through after
/// that: a provider that stalls, a batch that must stay running while a test looks at the queue.
/// Waiting is not cancellable (what it stands in for ignores its callers too).
public final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let waiters = Atomic<Int>(0)

    /// Callers waiting in ``pass()`` now.
    public var waiting: Int { waiters.load(ordering: .relaxed) }

    public init() {}

    /// Returns once the gate is open (at once if it is).
    public func pass() async {
        waiters.add(1, ordering: .relaxed)
        defer { waiters.subtract(1, ordering: .relaxed) }
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    /// Lets every waiting caller, and every later one, through.
    public func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Lets the longest-waiting caller through, if any, and leaves the gate shut: a provider that
    /// answers one request at a time. Returns whether a caller was waiting.
    @discardableResult
    public func letOneThrough() -> Bool {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume()
        return waiter != nil
    }
}
