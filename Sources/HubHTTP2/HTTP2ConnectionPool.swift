import Logging
import NIOCore
import Synchronization

/// The connections of one ``HTTP2Client`` to one origin.
///
/// A request leases a stream slot, runs, and releases it. A connection never gets more streams
/// than the server's `SETTINGS_MAX_CONCURRENT_STREAMS` (nor
/// ``HTTP2Client/Configuration/maximumStreamsPerConnection``). When every connection is full the
/// request waits and, up to ``HTTP2Client/Configuration/maximumConnectionsPerOrigin``, one more
/// connection opens. After GOAWAY or a refused stream a connection takes no new streams and closes
/// when its last one ends; a closed connection leaves the pool and the next request opens a new one.
/// A wait ends at the request's deadline.
final class HTTP2ConnectionPool: Sendable {
    let origin: HTTP2Origin
    private let group: any EventLoopGroup
    private let options: HTTP2Connection.Options
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let ledger: Mutex<HTTP2PoolLedger>
    /// Where this pool's turn through the event loops starts (see ``eventLoop(forConnection:)``).
    private let firstEventLoop: Int
    private static let pools = Atomic<Int>(0)

    init(
        origin: HTTP2Origin, group: any EventLoopGroup, options: HTTP2Connection.Options, connectTimeout: TimeAmount,
        maximumConnections: Int, streamCap: Int, logger: Logger
    ) {
        self.origin = origin
        self.group = group
        self.options = options
        self.connectTimeout = connectTimeout
        self.logger = logger
        ledger = Mutex(HTTP2PoolLedger(maximumConnections: maximumConnections, streamCap: streamCap))
        firstEventLoop = Self.pools.add(1, ordering: .relaxed).oldValue
    }

    /// A connection with a stream slot reserved for the caller, who must ``release(_:)`` it.
    /// - Throws: `.timedOut` at `deadline`, `.connectionFailed`, or `.shutdown`.
    func lease(deadline: NIODeadline) async throws(HTTP2ClientError) -> HTTP2Connection {
        let now = NIODeadline.now()
        let immediate: Result<HTTP2Connection, HTTP2ClientError>? = ledger.withLock { ledger in
            if let refusal = ledger.refusal(at: now) { return .failure(refusal) }
            return ledger.lease().map { .success($0) }
        }
        // A free slot returns without suspending: no task job for the common case.
        if let immediate { return try immediate.get() }
        let outcome = await withCheckedContinuation { queue(Waiter(id: 0, resume: $0), until: deadline) }
        return try outcome.get()
    }

    private typealias Waiter = HTTP2PoolLedger.Waiter

    /// Queues `waiter` (whose `id` is assigned here) unless a slot or a refusal is there by now.
    private func queue(_ waiter: Waiter, until deadline: NIODeadline) {
        var actions = HTTP2PoolLedger.Actions()
        let id: Int? = ledger.withLock { ledger in
            if let connection = ledger.lease() {
                actions.append(.hand(waiter, .success(connection)))
            } else if let refusal = ledger.refusal(at: .now()) {
                actions.append(.hand(waiter, .failure(refusal)))
            } else {
                let id = ledger.nextID()
                ledger.enqueue(Waiter(id: id, resume: waiter.resume), into: &actions)
                return id
            }
            return nil
        }
        perform(actions)
        guard let id else { return }
        let expiry = group.any().scheduleTask(deadline: deadline) { [weak self] () -> Void in self?.expire(waiter: id) }
        if !ledger.withLock({ $0.setExpiry(expiry, ofWaiter: id) }) { expiry.cancel() }
    }

    private func expire(waiter id: Int) {
        guard let waiter = ledger.withLock({ $0.removeWaiter(id) }) else { return }
        waiter.resume.resume(
            returning: .failure(HTTP2ClientError(.timedOut, "no stream to \(origin) became free before the deadline")))
    }

    /// Gives back a slot from ``lease(deadline:)``.
    func release(_ connection: HTTP2Connection) {
        update { $0.release(connection.id, into: &$1) }
    }

    /// Takes no new streams on connection `id`; it closes when its streams are done.
    func retire(_ id: Int) {
        update { $0.retire(id, into: &$1) }
    }

    private func handle(_ event: HTTP2ConnectionEvent, from id: Int) {
        switch event {
        case .streamLimit(let limit):
            update { $0.setLimit(limit, of: id, into: &$1) }
        case .goAway(let reason):
            logger.info(
                "HTTP/2 GOAWAY; in-flight requests finish, new ones go to another connection",
                metadata: ["origin": "\(origin)", "reason": "\(reason)"])
            update { $0.retire(id, into: &$1) }
        case .closing(let reason):
            if let reason {
                logger.debug("HTTP/2 connection closing", metadata: ["origin": "\(origin)", "reason": "\(reason)"])
            }
            update { $0.retire(id, into: &$1) }
        }
    }

    private func update(_ change: (inout HTTP2PoolLedger, inout HTTP2PoolLedger.Actions) -> Void) {
        var actions = HTTP2PoolLedger.Actions()
        ledger.withLock { change(&$0, &actions) }
        perform(actions)
    }

    private func perform(_ actions: HTTP2PoolLedger.Actions) {
        for step in actions {
            switch step {
            case .hand(let waiter, let result):
                waiter.expiry?.cancel()
                waiter.resume.resume(returning: result)
            case .close(let connection):
                connection.close()
            case .open(let id):
                open(id)
            }
        }
    }

    private func open(_ id: Int) {
        let deadline = NIODeadline.now() + connectTimeout
        let eventLoop = eventLoop(forConnection: id)
        Task {
            do throws(HTTP2ClientError) {
                let connection = try await HTTP2Connection.open(
                    id: id, origin: origin, eventLoop: eventLoop, options: options, deadline: deadline
                ) { [weak self] id, event in
                    self?.handle(event, from: id)
                }
                if ledger.withLock({ $0.isFailing }) {
                    logger.notice("connected again", metadata: ["origin": "\(origin)"])
                }
                update { $0.opened(connection, into: &$1) }
                // After `opened`: a connection that closed meanwhile leaves again at once.
                connection.channel.closeFuture.whenComplete { [weak self] _ in
                    self?.update { $0.closed(id, into: &$1) }
                }
            } catch {
                // Warned once per outage; the back-off keeps later attempts quiet.
                if ledger.withLock({ !$0.isFailing }) {
                    logger.warning(
                        "cannot connect; requests fail until a connection opens",
                        metadata: ["origin": "\(origin)", "error": "\(error)"])
                }
                update { $0.failedToOpen(error, into: &$1) }
            }
        }
    }

    /// The event loop for connection `id`: of the group's loops, one that runs the fewest of this
    /// pool's connections (ties go round in turn), so that the connections run on different
    /// threads. The group's own round-robin is shared with every other bootstrap in the process; a
    /// pool whose connections opened one at a time, each after a server or client elsewhere took
    /// the next loop, found them all on one thread, which capped the client at one core.
    private func eventLoop(forConnection id: Int) -> any EventLoop {
        let loops = Array(group.makeIterator())
        guard !loops.isEmpty else { return group.next() }
        var load: [ObjectIdentifier: Int] = [:]
        for member in ledger.withLock({ Array($0.members.values) }) {
            load[ObjectIdentifier(member.connection.channel.eventLoop), default: 0] += 1
        }
        let start = firstEventLoop + id
        let inTurn = (0..<loops.count).map { loops[(start + $0) % loops.count] }
        return inTurn.min { load[ObjectIdentifier($0), default: 0] < load[ObjectIdentifier($1), default: 0] }
            ?? inTurn[0]
    }

    /// Fails waiting requests, lets running ones finish for up to `grace`, then closes every connection.
    func shutdown(grace: Duration) async {
        update { $0.shutDown(into: &$1) }
        let end = ContinuousClock.now + grace
        while ContinuousClock.now < end, ledger.withLock({ $0.members.values.contains { $0.active > 0 } }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        closeAll()
    }

    /// Closes every connection at once (running requests fail).
    func closeAll() {
        for member in ledger.withLock({ Array($0.members.values) }) { member.connection.close() }
    }

    /// Connections now, for tests and diagnostics.
    var snapshot: [HTTP2ConnectionInfo] {
        ledger.withLock {
            $0.members.values.map {
                HTTP2ConnectionInfo(
                    id: $0.connection.id, streamLimit: $0.limit, activeStreams: $0.active, isRetired: $0.retired,
                    eventLoop: ObjectIdentifier($0.connection.channel.eventLoop))
            }
        }
    }
}
