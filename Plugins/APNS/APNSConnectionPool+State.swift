import NIOCore

/// The bookkeeping of one ``APNSConnectionPool``, mutated only under its lock. Every method is
/// synchronous and returns what must happen outside the lock (resume waiters, connect, close).
struct APNSPoolState {
    struct Entry {
        let connection: APNSConnection
        /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, capped by the configuration.
        var maxStreams: Int
        /// Streams leased and not yet released; never more than `maxStreams` are handed out.
        var openStreams = 0
        /// After GOAWAY or a retirement: no new streams; closed once `openStreams` reaches 0.
        var draining = false
        /// Whether a request has finished on it (APNs raises its one-stream limit after the first).
        var warm = false

        var hasRoom: Bool { !draining && openStreams < maxStreams }
    }

    struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<APNSConnection, any Error>
        var timer: Scheduled<Void>?
    }

    /// Work to do once the lock is released.
    struct Effects {
        var resume: [(Waiter, Result<APNSConnection, APNSError>)] = []
        /// A connection to open, with the ID it gets.
        var connect: Int?
        var close: [APNSConnection] = []
    }

    let maxConnections: Int
    let streamCap: Int
    var entries: [Int: Entry] = [:]
    var connecting = 0
    var waiters: [Waiter] = []
    var nextID = 0
    var isShutdown = false
    /// Consecutive failed connects; new ones wait `retryConnectAt` while no connection is usable.
    var failures = 0
    var retryConnectAt: NIODeadline?
    var lastConnectError: APNSError?

    init(maxConnections: Int, streamCap: Int) {
        self.maxConnections = max(1, maxConnections)
        self.streamCap = max(1, streamCap)
    }

    /// Takes a stream slot on the least busy connection that has room.
    mutating func takeSlot() -> APNSConnection? {
        var best: Int?
        var fewest = Int.max
        for (id, entry) in entries where entry.hasRoom && entry.openStreams < fewest {
            best = id
            fewest = entry.openStreams
        }
        guard let best else { return nil }
        entries[best]!.openStreams += 1
        return entries[best]!.connection
    }

    /// Why a send should not wait for a connection: the pool is shut down, or connecting failed
    /// recently and nothing else can serve it.
    func refusal(now: NIODeadline) -> APNSError? {
        if isShutdown { return APNSError(.shutdown, "the APNs transport is shutting down") }
        guard let retryConnectAt, now < retryConnectAt, connecting == 0,
            !entries.values.contains(where: { !$0.draining })
        else { return nil }
        var error = lastConnectError ?? APNSError(.connectionFailed, "APNs is unreachable")
        error.retryAfter = .nanoseconds((retryConnectAt - now).nanoseconds)
        return error
    }

    /// Opens one more connection when someone waits, none is being opened or warming up, and the
    /// limit allows. New connections start at one stream, so the next opens only after it warmed up.
    mutating func connectIfNeeded() -> Int? {
        let usable = entries.values.filter { !$0.draining }
        guard !waiters.isEmpty, !isShutdown, connecting == 0, usable.count < maxConnections,
            usable.allSatisfy(\.warm)
        else { return nil }
        connecting += 1
        nextID += 1
        return nextID
    }

    /// Hands free slots to waiters in arrival order, then opens a connection if some still wait.
    mutating func assign(into effects: inout Effects) {
        while !waiters.isEmpty, let connection = takeSlot() {
            effects.resume.append((waiters.removeFirst(), .success(connection)))
        }
        if effects.connect == nil { effects.connect = connectIfNeeded() }
    }

    /// Frees a slot; a draining connection closes when its last stream is done. The connection is
    /// warm from then on, whether or not its first request was answered.
    mutating func release(_ id: Int, into effects: inout Effects) {
        guard var entry = entries[id] else { return }
        entry.openStreams = max(0, entry.openStreams - 1)
        entry.warm = true
        entries[id] = entry
        if entry.draining && entry.openStreams == 0 { effects.close.append(entry.connection) }
        assign(into: &effects)
    }

    /// Stops new streams on a connection.
    mutating func drain(_ id: Int, into effects: inout Effects) {
        guard var entry = entries[id], !entry.draining else { return }
        entry.draining = true
        entries[id] = entry
        if entry.openStreams == 0 { effects.close.append(entry.connection) }
        assign(into: &effects)
    }

    /// Fails every waiter with `error`.
    mutating func failWaiters(_ error: APNSError, into effects: inout Effects) {
        effects.resume += waiters.map { ($0, .failure(error)) }
        waiters.removeAll()
    }
}
