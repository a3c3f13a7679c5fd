public import HubCore
import Synchronization

/// A switch between a hub and its store, to test store faults: while unplugged, every call
/// either hangs (a database that stopped answering) or fails at once (one that refuses
/// connections); plugging back in lets the hanging calls through.
///
/// ```swift
/// let plug = StorePlug()
/// let hub = try Hub(configuration: configuration, store: InterceptedStore(store, plug), transports: …)
/// plug.unplug(.hang)   // calls now hang; the hub's deadlines answer for them
/// plug.plugIn()
/// ```
public final class StorePlug: StoreInterceptor {
    public enum Fault: Sendable {
        /// Calls wait until plugged in again, ignoring cancellation (like a query on a dead connection).
        case hang
        /// Calls fail with `HubError(.unavailable)` at once.
        case fail
    }

    private struct State {
        var fault: Fault?
        var waiting: [CheckedContinuation<Void, Never>] = []
        var calls: [String: Int] = [:]
        var claimed = 0
    }

    private let state = Mutex(State())

    public init() {}

    public func unplug(_ fault: Fault) { state.withLock { $0.fault = fault } }

    public func plugIn() {
        let waiting = state.withLock { state in
            state.fault = nil
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }

    /// How many times the store method `name` was called (through the plug).
    public func calls(_ name: String) -> Int { state.withLock { $0.calls[name, default: 0] } }

    /// How many calls hang right now, waiting to be plugged in again.
    public var hanging: Int { state.withLock { $0.waiting.count } }

    /// How many deliveries the store's claims returned (through the plug).
    public var claimedDeliveries: Int { state.withLock { $0.claimed } }

    public func intercept<T: Sendable>(
        _ name: String, _ call: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let fault = state.withLock { state in
            state.calls[name, default: 0] += 1
            return state.fault
        }
        switch fault {
        case nil:
            break
        case .fail:
            throw HubError(.unavailable, "The test unplugged the store.")
        case .hang:
            await withCheckedContinuation { continuation in
                let release = state.withLock { state -> Bool in
                    guard state.fault != nil else { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if release { continuation.resume() }
            }
        }
        let result = try await call()
        if let claimed = result as? [ClaimedDelivery] {
            state.withLock { $0.claimed += claimed.count }
        }
        return result
    }
}
