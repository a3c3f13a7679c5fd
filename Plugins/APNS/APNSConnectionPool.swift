import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The connections to one APNs server for one set of credentials.
///
/// A send leases a stream slot, runs its request, and releases the slot. Slots never exceed any
/// connection's `SETTINGS_MAX_CONCURRENT_STREAMS` (APNs starts token connections at 1 and raises
/// it after the first valid token) nor ``APNSTransport/Configuration/maxStreamsPerConnection``.
/// When every connection is full a send waits, and one more connection opens if the limit
/// allows and no new connection is still warming up. After GOAWAY a connection takes no new
/// streams and closes when its last one is done; a closed connection (reset, failed PING) leaves
/// the pool, and the next send opens a new one. A wait ends at the send's deadline.
final class APNSConnectionPool: APNSConnectionDelegate, Sendable {
    let server: APNSTransport.Server
    /// Names the pool in logs: environment, server and credentials, never secrets.
    let label: String
    private let tls: NIOSSLContext
    private let configuration: APNSTransport.Configuration
    private let logger: Logger
    private let state: Mutex<APNSPoolState>
    /// The distinct tokens answered `BadDeviceToken` since the last accepted push (at most as many
    /// as the threshold they are counted against), and whether there are any (read on every
    /// accepted push without the lock).
    private let badDeviceTokens = Mutex<Set<String>>([])
    private let inBadDeviceTokenStreak = Atomic<Bool>(false)
    /// Where this pool's turn through NIO's event loops starts (see ``eventLoop(forConnection:)``).
    private let firstEventLoop: Int
    private static let pools = Atomic<Int>(0)

    init(
        server: APNSTransport.Server, label: String, tls: NIOSSLContext, configuration: APNSTransport.Configuration,
        logger: Logger
    ) {
        self.server = server
        self.label = label
        self.tls = tls
        self.configuration = configuration
        self.logger = logger
        firstEventLoop = Self.pools.add(1, ordering: .relaxed).oldValue
        state = Mutex(
            APNSPoolState(
                maxConnections: configuration.maxConnections, streamCap: configuration.maxStreamsPerConnection))
    }

    /// A connection with a stream slot for this caller, who must ``release(_:)`` it.
    ///
    /// - Throws: ``APNSError`` `.timedOut` at `deadline`, `.connectionFailed` when no connection
    ///   can be made, `.shutdown` once the transport shuts down.
    func lease(deadline: NIODeadline) async throws(APNSError) -> APNSConnection {
        let now = NIODeadline.now()
        let fast: Result<APNSConnection, APNSError>? = state.withLock { state in
            if let refusal = state.refusal(now: now) { return .failure(refusal) }
            return state.takeSlot().map { .success($0) }
        }
        if let fast { return try fast.get() }
        do {
            return try await withCheckedThrowingContinuation { continuation in
                enqueue(continuation, deadline: deadline)
            }
        } catch let error as APNSError {
            throw error
        } catch {
            throw APNSError(.connectionFailed, "waiting for an APNs connection failed", underlying: error)
        }
    }

    private func enqueue(_ continuation: CheckedContinuation<APNSConnection, any Error>, deadline: NIODeadline) {
        var effects = APNSPoolState.Effects()
        let waiterID: Int? = state.withLock { state in
            if let connection = state.takeSlot() {
                continuation.resume(returning: connection)
                return nil
            }
            if let refusal = state.refusal(now: .now()) {
                continuation.resume(throwing: refusal)
                return nil
            }
            state.nextID += 1
            state.waiters.append(.init(id: state.nextID, continuation: continuation))
            effects.connect = state.connectIfNeeded()
            return state.nextID
        }
        perform(effects)
        guard let waiterID else { return }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: deadline) {
            self.expire(waiterID)
        }
        let stale = state.withLock { state in
            guard let index = state.waiters.firstIndex(where: { $0.id == waiterID }) else { return true }
            state.waiters[index].timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    private func expire(_ waiterID: Int) {
        let waiter = state.withLock { state in
            state.waiters.firstIndex { $0.id == waiterID }.map { state.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(
            throwing: APNSError(.timedOut, "no APNs stream became free before the request timeout"))
    }

    /// Gives back the slot leased with ``lease(deadline:)``.
    func release(_ connection: APNSConnection) {
        var effects = APNSPoolState.Effects()
        state.withLock { $0.release(connection.id, into: &effects) }
        perform(effects)
    }

    /// Takes no new streams on `connection` and closes it when its streams are done (after
    /// `IdleTimeout`, `UnrelatedKeyIdInToken`, `TooManyProviderTokenUpdates`, 503).
    func retire(_ connection: APNSConnection) {
        var effects = APNSPoolState.Effects()
        state.withLock { $0.drain(connection.id, into: &effects) }
        perform(effects)
    }

    func connection(_ id: Int, didChangeMaxConcurrentStreams maximum: Int) {
        var effects = APNSPoolState.Effects()
        state.withLock { state in
            guard state.entries[id] != nil else { return }
            state.entries[id]!.maxStreams = max(0, min(maximum, state.streamCap))
            state.assign(into: &effects)
        }
        perform(effects)
    }

    func connection(_ id: Int, didReceiveGoAway reason: String?) {
        logger.info(
            "APNs sent GOAWAY; finishing in-flight requests and moving to a new connection",
            metadata: ["pool": "\(label)", "reason": "\(reason ?? "none")"])
        var effects = APNSPoolState.Effects()
        state.withLock { $0.drain(id, into: &effects) }
        perform(effects)
    }

    func connectionIsClosing(_ id: Int, reason: (any Error)?) {
        var effects = APNSPoolState.Effects()
        let known = state.withLock { state in
            let known = state.entries[id].map { !$0.draining } ?? false
            state.drain(id, into: &effects)
            return known
        }
        if known {
            logger.debug(
                "APNs connection closing",
                metadata: ["pool": "\(label)", "reason": "\(reason.map { "\($0)" } ?? "closed")"])
        }
        perform(effects)
    }

    private func closed(_ id: Int) {
        var effects = APNSPoolState.Effects()
        state.withLock { state in
            state.entries[id] = nil
            state.assign(into: &effects)
        }
        perform(effects)
    }

    private func perform(_ effects: APNSPoolState.Effects) {
        for (waiter, result) in effects.resume {
            waiter.timer?.cancel()
            waiter.continuation.resume(with: result.mapError { $0 as any Error })
        }
        for connection in effects.close { connection.close() }
        if let id = effects.connect { open(id) }
    }

    private func open(_ id: Int) {
        let deadline = NIODeadline.now() + TimeAmount(configuration.connectTimeout)
        Task {
            do {
                let connection = try await APNSConnection.connect(
                    id: id, server: server, tls: tls, configuration: configuration, delegate: self,
                    eventLoop: eventLoop(forConnection: id), deadline: deadline)
                opened(connection)
            } catch let error as APNSError {
                failedToOpen(error)
            } catch {
                failedToOpen(APNSError(.connectionFailed, "cannot connect to APNs at \(server)", underlying: error))
            }
        }
    }

    /// The event loop for connection `id`: of NIO's shared loops, one that runs the fewest of this
    /// pool's connections (ties go round in turn), so that the connections run on different
    /// threads. The group's own round-robin is shared with every other bootstrap in the process; a
    /// pool whose connections opened one at a time, each after a server or client elsewhere took
    /// the next loop, found them all on one thread, which capped the transport at one core.
    private func eventLoop(forConnection id: Int) -> any EventLoop {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        var load: [ObjectIdentifier: Int] = [:]
        for loop in eventLoops { load[loop, default: 0] += 1 }
        let start = firstEventLoop + id
        let inTurn = (0..<loops.count).map { loops[(start + $0) % loops.count] }
        return inTurn.min { load[ObjectIdentifier($0), default: 0] < load[ObjectIdentifier($1), default: 0] }
            ?? inTurn[0]
    }

    /// The event loop of every open connection, for tests.
    var eventLoops: [ObjectIdentifier] {
        state.withLock { $0.entries.values.map { ObjectIdentifier($0.connection.channel.eventLoop) } }
    }

    private func opened(_ connection: APNSConnection) {
        var effects = APNSPoolState.Effects()
        let recovered: Bool = state.withLock { state in
            state.connecting -= 1
            let recovered = state.failures > 0
            state.failures = 0
            state.retryConnectAt = nil
            if state.isShutdown {
                effects.close.append(connection)
            } else {
                let maximum = min(connection.initialMaxConcurrentStreams, state.streamCap)
                state.entries[connection.id] = .init(connection: connection, maxStreams: maximum)
                state.assign(into: &effects)
            }
            return recovered
        }
        if recovered { logger.notice("connected to APNs again", metadata: ["pool": "\(label)"]) }
        connection.channel.closeFuture.whenComplete { _ in self.closed(connection.id) }
        perform(effects)
    }

    private func failedToOpen(_ error: APNSError) {
        var effects = APNSPoolState.Effects()
        let first: Bool = state.withLock { state in
            state.connecting -= 1
            state.failures += 1
            let backoff = min(100 * (1 << min(state.failures - 1, 9)), 30_000)
            state.retryConnectAt = .now() + .milliseconds(Int64(backoff))
            state.lastConnectError = error
            if !state.entries.values.contains(where: { !$0.draining }) {
                state.failWaiters(error, into: &effects)
            } else {
                state.assign(into: &effects)
            }
            return state.failures == 1
        }
        if first {
            logger.warning(
                "cannot connect to APNs; sends are retried later", metadata: ["pool": "\(label)", "error": "\(error)"])
        }
        perform(effects)
    }

    /// Counts `token` in the streak of distinct tokens answered `BadDeviceToken` with no accepted
    /// push in between (the same token again does not count: several deliveries to one dead
    /// token say nothing about the others).
    /// - Returns: the distinct tokens of the streak, at most `limit`, and whether this answer made
    ///   the count reach `limit`.
    func recordBadDeviceToken(_ token: String, limit: Int) -> (count: Int, reachedLimit: Bool) {
        inBadDeviceTokenStreak.store(true, ordering: .relaxed)
        return badDeviceTokens.withLock { tokens in
            guard tokens.count < limit else { return (tokens.count, false) }
            let inserted = tokens.insert(token).inserted
            return (tokens.count, inserted && tokens.count == limit)
        }
    }

    /// Ends a `BadDeviceToken` streak.
    func recordDelivered() {
        guard inBadDeviceTokenStreak.load(ordering: .relaxed) else { return }
        inBadDeviceTokenStreak.store(false, ordering: .relaxed)
        badDeviceTokens.withLock { $0.removeAll() }
    }

    /// Fails waiting sends, lets in-flight ones finish for up to `grace`, then closes every connection.
    func shutdown(grace: Duration) async {
        var effects = APNSPoolState.Effects()
        state.withLock { state in
            state.isShutdown = true
            state.failWaiters(APNSError(.shutdown, "the APNs transport is shutting down"), into: &effects)
        }
        perform(effects)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline, state.withLock({ $0.entries.values.contains { $0.openStreams > 0 } }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let connections = state.withLock { $0.entries.values.map(\.connection) }
        for connection in connections { connection.close() }
    }

    /// Connections open now and the streams in use on each, for tests and diagnostics.
    var snapshot: [(id: Int, maxStreams: Int, openStreams: Int, draining: Bool)] {
        state.withLock { $0.entries.values.map { ($0.connection.id, $0.maxStreams, $0.openStreams, $0.draining) } }
    }
}
