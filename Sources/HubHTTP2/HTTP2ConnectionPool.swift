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
    }

    /// A connection with a stream slot reserved for the caller, who must ``release(_:)`` it.
    /// - Throws: `.timedOut` at `deadline`, `.connectionFailed`, or `.shutdown`.
    func lease(deadline: NIODeadline) async throws(HTTP2ClientError) -> HTTP2Connection {
        let now = NIODeadline.now()
        let immediate: Result<HTTP2Connection, HTTP2ClientError>? = ledger.withLock { ledger in
            if let refusal = ledger.refusal(at: now) { return .failure(refusal) }
            return ledger.lease().map { .success($0) }
        }
        let outcome = await immediate.asyncOr {
            await withCheckedContinuation { queue(Waiter(id: 0, resume: $0), until: deadline) }
        }
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

    /// Takes no new streams on `connection`; it closes when its streams are done.
    func retire(_ connection: HTTP2Connection) {
        update { $0.retire(connection.id, into: &$1) }
    }

    private func handle(_ event: HTTP2ConnectionEvent, from id: Int) {
        switch event {
        case .streamLimit(let limit):
            update { $0.setLimit(limit, of: id, into: &$1) }
        case .goAway(let code):
            logger.debug(
                "HTTP/2 GOAWAY; new requests go to another connection",
                metadata: ["origin": "\(origin)", "code": "\(code)"])
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
        Task {
            do throws(HTTP2ClientError) {
                let connection = try await HTTP2Connection.open(
                    id: id, origin: origin, group: group, options: options, deadline: deadline
                ) { [weak self] id, event in
                    self?.handle(event, from: id)
                }
                update { $0.opened(connection, into: &$1) }
                // After `opened`: a connection that closed meanwhile leaves again at once.
                connection.channel.closeFuture.whenComplete { [weak self] _ in
                    self?.update { $0.closed(id, into: &$1) }
                }
            } catch {
                logger.debug("cannot connect", metadata: ["origin": "\(origin)", "error": "\(error)"])
                update { $0.failedToOpen(error, into: &$1) }
            }
        }
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

    /// Connections now, for tests and diagnostics: stream limit, active streams, retired.
    var snapshot: [(id: Int, limit: Int, active: Int, retired: Bool)] {
        ledger.withLock { $0.members.values.map { ($0.connection.id, $0.limit, $0.active, $0.retired) } }
    }
}

extension Optional {
    /// The wrapped value, or what `fallback` produces.
    fileprivate func asyncOr(_ fallback: () async -> Wrapped) async -> Wrapped {
        if let self { return self }
        return await fallback()
    }
}
