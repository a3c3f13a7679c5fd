import NIOCore

/// The bookkeeping of one ``HTTP2ConnectionPool``: which connections exist, how many streams each
/// runs and allows, who waits. Mutated only under the pool's lock; every method is synchronous and
/// collects what must happen after the lock is released in ``Actions``.
struct HTTP2PoolLedger {
    /// A connection and its stream count.
    struct Member {
        let connection: HTTP2Connection
        /// Streams allowed at once: the server's limit, capped by the configuration.
        var limit: Int
        /// Streams leased and not yet released.
        var active = 0
        /// No new streams (GOAWAY, a refused stream, closing); closed when `active` reaches 0.
        var retired = false
        /// Whether a request has finished on it: servers such as APNs start a connection at one
        /// stream and raise the limit after the first answer.
        var warm = false
    }

    /// Someone waiting for a stream; resumed exactly once, by ``Step/hand(_:_:)`` or its expiry.
    struct Waiter {
        let id: Int
        let resume: CheckedContinuation<Result<HTTP2Connection, HTTP2ClientError>, Never>
        var expiry: Scheduled<Void>? = nil
    }

    /// One thing to do once the lock is released, in order.
    enum Step {
        case hand(Waiter, Result<HTTP2Connection, HTTP2ClientError>)
        case close(HTTP2Connection)
        /// Open a connection with this ID.
        case open(Int)
    }
    typealias Actions = [Step]

    let maximumConnections: Int
    let streamCap: Int
    private(set) var members: [Int: Member] = [:]
    private(set) var waiters = CircularBuffer<Waiter>()
    /// The expiry of every queued waiter, by ID (`nil` until ``setExpiry(_:ofWaiter:)``): set and
    /// found without searching the queue, which can hold hundreds of waiters under the lock.
    private var expiries: [Int: Scheduled<Void>?] = [:]
    private(set) var opening = 0
    private var lastID = 0
    private(set) var isShutdown = false
    /// Failed opens in a row, and until when a new open waits after them.
    private var failedOpens = 0
    private var backoffUntil: NIODeadline?
    private var lastOpenError: HTTP2ClientError?

    init(maximumConnections: Int, streamCap: Int) {
        self.maximumConnections = max(1, maximumConnections)
        self.streamCap = max(1, streamCap)
    }

    mutating func nextID() -> Int {
        lastID += 1
        return lastID
    }

    /// A stream slot on the connection with the fewest active streams that has room, if any.
    mutating func lease() -> HTTP2Connection? {
        var chosen: Int?
        var least = Int.max
        for (id, member) in members where !member.retired && member.active < min(member.limit, least) {
            chosen = id
            least = member.active
        }
        guard let chosen else { return nil }
        members[chosen]!.active += 1
        return members[chosen]!.connection
    }

    /// Why a caller should not wait: shut down, or the last opens failed and nothing can serve it
    /// (with how long until the next try as `retryAfter`).
    func refusal(at now: NIODeadline) -> HTTP2ClientError? {
        if isShutdown { return HTTP2ClientError(.shutdown, "the HTTP/2 client is shut down") }
        guard let backoffUntil, now < backoffUntil, opening == 0, !members.values.contains(where: { !$0.retired })
        else { return nil }
        var error = lastOpenError ?? HTTP2ClientError(.connectionFailed, "the server is unreachable")
        error.retryAfter = .nanoseconds((backoffUntil - now).nanoseconds)
        return error
    }

    /// Whether the last open failed (a later success is a recovery worth logging).
    var isFailing: Bool { failedOpens > 0 }

    mutating func enqueue(_ waiter: Waiter, into actions: inout Actions) {
        waiters.append(waiter)
        expiries[waiter.id] = .some(nil)
        openIfNeeded(into: &actions)
    }

    /// Records `expiry` for waiter `id`; `false` when it is no longer queued (already handed a
    /// stream or failed), so the caller cancels the expiry.
    mutating func setExpiry(_ expiry: Scheduled<Void>, ofWaiter id: Int) -> Bool {
        guard expiries[id] != nil else { return false }
        expiries[id] = .some(expiry)
        return true
    }

    /// Takes waiter `id` out of the queue at its deadline (the queue is searched only then).
    mutating func removeWaiter(_ id: Int) -> Waiter? {
        guard expiries.removeValue(forKey: id) != nil,
            let index = waiters.firstIndex(where: { $0.id == id })
        else { return nil }
        return waiters.remove(at: index)
    }

    /// The next waiter in arrival order, with its expiry, out of the queue.
    private mutating func dequeue() -> Waiter {
        var waiter = waiters.removeFirst()
        waiter.expiry = expiries.removeValue(forKey: waiter.id) ?? nil
        return waiter
    }

    /// Every waiter, with its expiry, out of the queue.
    private mutating func dequeueAll() -> [Waiter] {
        var all: [Waiter] = []
        all.reserveCapacity(waiters.count)
        while !waiters.isEmpty { all.append(dequeue()) }
        return all
    }

    /// Opens one connection at a time, only for waiters, within the limit, and only once every
    /// open connection has answered once (so a connection that starts at one stream does not
    /// set off a connection per waiter before its limit is raised).
    ///
    /// Runs on every release: the common case (nobody waits) returns before looking at members.
    private mutating func openIfNeeded(into actions: inout Actions) {
        guard !waiters.isEmpty, !isShutdown, opening == 0,
            !actions.contains(where: { if case .open = $0 { true } else { false } }),
            backoffUntil.map({ NIODeadline.now() >= $0 }) ?? true
        else { return }
        var usable = 0
        for member in members.values where !member.retired {
            guard member.warm else { return }
            usable += 1
        }
        guard usable < maximumConnections else { return }
        opening += 1
        actions.append(.open(nextID()))
    }

    /// Hands free slots to waiters in arrival order; opens a connection for those still waiting.
    mutating func dispatch(into actions: inout Actions) {
        while !waiters.isEmpty, let connection = lease() {
            actions.append(.hand(dequeue(), .success(connection)))
        }
        openIfNeeded(into: &actions)
    }

    mutating func opened(_ connection: HTTP2Connection, into actions: inout Actions) {
        opening -= 1
        failedOpens = 0
        backoffUntil = nil
        if isShutdown {
            actions.append(.close(connection))
            return
        }
        members[connection.id] = Member(connection: connection, limit: min(connection.initialStreamLimit, streamCap))
        dispatch(into: &actions)
    }

    /// A failed open backs off (0.1 s doubling to 30 s); waiters fail when nothing else can serve them.
    mutating func failedToOpen(_ error: HTTP2ClientError, into actions: inout Actions) {
        opening -= 1
        failedOpens += 1
        backoffUntil = .now() + .milliseconds(Int64(min(100 << min(failedOpens - 1, 9), 30_000)))
        lastOpenError = error
        if members.values.contains(where: { !$0.retired }) {
            dispatch(into: &actions)
        } else {
            actions += dequeueAll().map { .hand($0, .failure(error)) }
        }
    }

    mutating func release(_ id: Int, into actions: inout Actions) {
        guard var member = members[id] else { return }
        member.active = max(0, member.active - 1)
        member.warm = true
        members[id] = member
        if member.retired && member.active == 0 { actions.append(.close(member.connection)) }
        dispatch(into: &actions)
    }

    mutating func setLimit(_ limit: Int, of id: Int, into actions: inout Actions) {
        guard members[id] != nil else { return }
        members[id]!.limit = max(0, min(limit, streamCap))
        dispatch(into: &actions)
    }

    /// No new streams on `id`; it closes once its active streams are done.
    mutating func retire(_ id: Int, into actions: inout Actions) {
        guard var member = members[id], !member.retired else { return }
        member.retired = true
        members[id] = member
        if member.active == 0 { actions.append(.close(member.connection)) }
        dispatch(into: &actions)
    }

    mutating func closed(_ id: Int, into actions: inout Actions) {
        members[id] = nil
        dispatch(into: &actions)
    }

    /// Refuses new work and fails every waiter.
    mutating func shutDown(into actions: inout Actions) {
        isShutdown = true
        let error = HTTP2ClientError(.shutdown, "the HTTP/2 client is shut down")
        actions += dequeueAll().map { .hand($0, .failure(error)) }
    }
}
