import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The hub's HTTP/1.1 child channel: a ``ConnectionGuard`` that counts the connection in (or
/// refuses it) and enforces the ``ConnectionLimits`` timeouts, the hub's ``HTTP1ServerCodec``, a
/// ``ParkingHandler`` for requests that wait without a task, and a ``RequestDispatcher`` instead
/// of Hummingbird's task per connection, which hands requests to Hummingbird's responder (routes
/// and middleware are Hummingbird's) as the ``RequestGate`` lets them run.
///
/// What a waiting connection costs is kept small (docs/benchmarks.md, "Waiting"):
/// - a connection has no task of its own: its requests are parsed in the pipeline and each runs
///   in a task that ends with it (Hummingbird's task per connection, with its frame slabs and its
///   `NIOAsyncChannel`, cost ~10 KiB per connection even before its first request);
/// - one handler parses and writes HTTP/1.1, keeping only its state between requests (NIO's
///   decoder, encoder and the handlers around them kept ~2.5 KiB);
/// - the receive buffer starts at 512 bytes (a request head's size) instead of NIO's 2 KiB and
///   grows for connections that read more (publishes).
///
/// Hummingbird's server waits for its connections' tasks before it stops; here one task per
/// server (``ServedConnections``) waits, after a graceful shutdown began, until every connection
/// closed, so the hub still stops after the last parked answer went out.
struct GuardedHTTP1Channel: ServerChildChannel {
    /// A connection set up; nothing is left to do in a task of its own.
    struct Value: ServerChildChannelValue {
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let registry: ConnectionRegistry
    let gate: RequestGate
    let served = ServedConnections()

    init(responder: @escaping HTTPChannelHandler.Responder, registry: ConnectionRegistry, gate: RequestGate) {
        self.responder = responder
        self.registry = registry
        self.gate = gate
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536))
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ConnectionGuard(registry: registry))
            // One handler parses requests and writes responses (instead of NIO's decoder and
            // encoder, the HTTP types codec and the head guards: they kept ~2.5 KiB per connection).
            try pipeline.addHandler(HTTP1ServerCodec())
            // Instead of Hummingbird's HTTPConnectionStateHandler: ConnectionGuard keeps the
            // timeouts (Hummingbird's idle timeout restarts with every body part, so a trickled
            // body would never be cut) and closes the connection when the server quiesces.
            try pipeline.addHandler(RequestPhaseHandler())
            // After the phase handler, so it sees only real responses.
            try pipeline.addHandler(ParkingHandler())
            try pipeline.addHandler(RequestDispatcher(responder: responder, gate: gate, logger: logger))
            served.opened(channel)
            return Value(channel: channel)
        }
    }

    /// Returns at once (the connection lives on in its pipeline), except in the one task per server
    /// that keeps the server running, after a graceful shutdown began, until its connections closed.
    func handle(value: Value, logger: Logger) async {
        guard served.claimKeeper() else { return }
        do {
            try await gracefulShutdown()
        } catch {
            served.releaseKeeper()
            return
        }
        await served.drained()
    }
}

/// The open connections of one ``GuardedHTTP1Channel``, so its server stops after the last.
final class ServedConnections: Sendable {
    private struct State {
        var open = 0
        var keeper = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// Counts `channel` in until it closes.
    func opened(_ channel: any Channel) {
        state.withLock { $0.open += 1 }
        channel.closeFuture.whenComplete { _ in self.closed() }
    }

    private func closed() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open -= 1
            guard state.open == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// `true` once, for the connection task that is to wait for the others at shutdown.
    func claimKeeper() -> Bool {
        state.withLock { state in
            if state.keeper { return false }
            state.keeper = true
            return true
        }
    }

    /// The keeper's task ended early (cancelled): the next connection's task takes over.
    func releaseKeeper() {
        state.withLock { $0.keeper = false }
    }

    /// Returns once no connection is open.
    func drained() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.open == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
