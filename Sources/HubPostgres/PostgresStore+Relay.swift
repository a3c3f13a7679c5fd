import Foundation
import HubCore
public import HubPolling
import Logging
import PostgresNIO

/// One wake-up as it travels between instances: a feed and whom in it to wake (its anonymous
/// waiters; one endpoint's; or, with `everyone`, all of them but the `except` endpoint's).
///
/// Compact keys keep many wake-ups in one 8000-byte NOTIFY. An instance of an older version
/// ignores `all` and `x`, and takes an everyone wake-up for a wake-up of the anonymous waiters
/// (its polling endpoints then wake at their timeout; upgrade all instances together).
struct Wake: Hashable, Codable, Sendable {
    var app: String
    var user: String
    var endpoint: String?
    var everyone: Bool?
    var except: String?
    enum CodingKeys: String, CodingKey {
        case app = "a"
        case user = "u"
        case endpoint = "e"
        case everyone = "all"
        case except = "x"
    }

    init(app: String, user: String, endpoint: String? = nil, everyone: Bool? = nil, except: String? = nil) {
        self.app = app
        self.user = user
        self.endpoint = endpoint
        self.everyone = everyone
        self.except = except
    }

    init(_ key: FeedKey, _ audience: FeedSignals.Audience) {
        switch audience {
        case .feed: self.init(app: key.appId, user: key.userId)
        case .endpoint(let endpoint): self.init(app: key.appId, user: key.userId, endpoint: endpoint)
        case .everyone(let except): self.init(app: key.appId, user: key.userId, everyone: true, except: except)
        }
    }

    var key: FeedKey { FeedKey(appId: app, userId: user) }

    var audience: FeedSignals.Audience {
        if everyone == true { return .everyone(except: except) }
        return endpoint.map(FeedSignals.Audience.endpoint) ?? .feed
    }
}

/// The payload of one `NOTIFY`: who sent it and the wake-ups it carries.
struct WakeMessage: Codable, Sendable {
    var from: String
    var wakes: [Wake]
}

/// What the relay keeps between calls: where wake-ups go, and those not sent yet.
struct RelayState {
    var target: FeedSignals?
    var pending: [Wake] = []
    var pendingSet: Set<Wake> = []
    var dropped = 0
    /// Whether the relay connection's LISTEN is in effect.
    var listening = false
    /// The other instances heard on this schema's channel whose wake-up connection was not seen
    /// gone since: wake-ups are sent only while there is one.
    var peers: Set<String> = []
    /// Whether this instance owes the others a message (it began listening, or a newcomer spoke).
    var announce = false
    /// NOTIFYs sent, and wake-ups left unsent because no other instance listened (diagnostics).
    var notifies = 0
    var unsent = 0
}

// Wake-ups across instances, over PostgreSQL's LISTEN/NOTIFY, on one connection of their own
// (outside the pool, so that wake-ups never wait behind busy transactions).
//
// Outgoing: the relay closure given to `FeedSignals` only queues the wake-up (it runs on the
// publishing request's path and must not wait). A sender takes everything queued, drops
// duplicates, and sends it with `pg_notify` in as few notifications as fit 8000 bytes each; while
// one batch is being sent the next one gathers, so a burst of publishes costs a few NOTIFYs.
// Incoming: the same connection LISTENs; each notification from another instance wakes the local
// waiters it names (this instance's own come back too, and are skipped by instance ID).
// Only while another instance listens: an instance alone on its channel sent a NOTIFY per publish
// batch that nobody read (a transaction and a WAL flush each). So an instance that begins to
// listen announces itself with a message of no wake-ups, and one that hears a new instance answers
// with one; every message names its sender, whom the receiver counts as a peer until the
// heartbeat no longer finds the peer's wake-up connection in `pg_stat_activity`. Wake-ups are sent
// while there is a peer and dropped otherwise. A new instance's first wake-ups from the others
// can be missed for the time its announcement takes to arrive, as those sent before it listened
// are (an instance of an older version sends no announcement: upgrade all instances together).
// A lost connection is reopened (100 ms, doubling up to 5 s); a heartbeat query every 15 s
// notices a connection that died without closing (both pauses on `configuration.clock`, the
// hub's). Wake-ups queued meanwhile are sent after the
// reconnect; those other instances sent while this one was away are lost, and the long-polls
// they were for end at their timeout and read the change then. Losing and regaining the
// connection forgets the feeds' newest versions (`FeedSignals.forgetVersions()`), so no long-poll
// skips its first read on the strength of what this instance knew before. With several hosts the
// connection goes to the one the store uses now (`PostgresStore+Failover.swift`), so after a
// failover wake-ups flow through the new primary.
extension PostgresStore {
    /// Most wake-ups queued for sending; beyond it new ones are dropped (and counted in a warning).
    static let relayQueueLimit = 50_000
    /// NOTIFY payloads must stay under 8000 bytes.
    static let payloadLimit = 7_900
    static let heartbeatInterval = Duration.seconds(15)
    static let heartbeatTimeout = Duration.seconds(10)
    /// The bell the sender waits on while it has nothing to send.
    private static let doorbell = Bell("relay sender")

    /// The NOTIFY channel: one per schema, so hubs in different schemas do not wake each other.
    var wakeChannel: String { String(("hub_wake" + (configuration.schema.map { "_\($0)" } ?? "")).prefix(63)) }

    /// Connects `signals` to the other hub instances on this database.
    ///
    /// Sets `signals`' relay so that every local wake-up (a publish, a dismiss, a polling delivery)
    /// is also sent to the other instances with `NOTIFY` (while another one listens: see
    /// ``relayPeerCount``), and, while ``run()`` runs, LISTENs for
    /// theirs and wakes the matching local waiters with `FeedSignals.receive`; this instance's
    /// own notifications are recognised by ``instanceID`` and skipped. Call once, with the
    /// `FeedSignals` the hub and the polling transport share; calling again moves the relay to
    /// the new `signals`.
    public func relay(into signals: FeedSignals) {
        relayState.withLock { $0.target = signals }
        signals.setRelay { [weak self] key, audience in self?.queue(Wake(key, audience)) }
        relayStarts.continuation.yield()
    }

    /// Queues a local wake-up for the other instances.
    func queue(_ wake: Wake) {
        let queued = relayState.withLock { state -> Bool in
            if state.pendingSet.contains(wake) { return true }
            guard state.pending.count < Self.relayQueueLimit else {
                state.dropped += 1
                return false
            }
            state.pending.append(wake)
            state.pendingSet.insert(wake)
            return true
        }
        if queued { relayDoorbell.ring(Self.doorbell) }
    }

    /// Keeps the relay connection open (reopening it when lost), sending queued wake-ups and
    /// listening for other instances', until cancelled.
    func runRelay() async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            var host: Int?
            do {
                let target = try await hosts.target()
                host = target
                try await withSession(
                    listeners[target], started: listenerStarted, leaseTimeout: configuration.leaseTimeout,
                    statementTimeout: Self.heartbeatTimeout
                ) { session in
                    try await self.hosts.check(session, pool: "wake-ups", host: target)
                    try await self.relay(on: session)
                }
                delay = .milliseconds(100)
            } catch {
                guard !Task.isCancelled else { return }
                if let host { hosts.failed(host: host, error: Self.translate(error)) }
                relayState.withLock { $0.target }?.forgetVersions()
                logger.warning(
                    "wake-up relay lost its connection; reconnecting",
                    metadata: ["error": "\(Self.translate(error))", "retryIn": "\(delay)"])
            }
            try? await configuration.clock.sleep(until: configuration.clock.now + delay, tolerance: nil)
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// Sends, listens and checks the connection until one of them fails or the task is
    /// cancelled; then closes the connection, which ends the others (a LISTEN only ends when its
    /// connection does).
    private func relay(on session: Session) async throws {
        let connection = session.connection
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.heartbeat(session) }
            group.addTask { try await self.sendWakes(on: session) }
            group.addTask {
                try await connection.listen(on: self.wakeChannel) { notifications in
                    self.logger.debug("listening for wake-ups of other instances")
                    // Wake-ups sent while this instance was not listening are lost: what it
                    // knew of the feeds' newest versions may be stale.
                    self.relayState.withLock { state in
                        state.listening = true
                        state.announce = true
                    }
                    self.relayDoorbell.ring(Self.doorbell)
                    self.relayState.withLock { $0.target }?.forgetVersions()
                    for try await notification in notifications { self.received(notification.payload) }
                }
                throw SessionFailure.closed
            }
            defer {
                relayState.withLock { $0.listening = false }
                group.cancelAll()
                session.close()
            }
            try await group.next()
        }
    }

    /// Sends what is queued whenever something is; throws when the connection fails.
    private func sendWakes(on session: Session) async throws {
        while true {
            let ticket = relayDoorbell.ticket()
            let (wakes, dropped, announce) = relayState.withLock { state in
                defer {
                    state.pending.removeAll(keepingCapacity: true)
                    state.pendingSet.removeAll(keepingCapacity: true)
                    state.dropped = 0
                    state.announce = false
                }
                // Nobody else listens: nothing to send but an announcement.
                if state.peers.isEmpty { state.unsent += state.pending.count }
                return (state.peers.isEmpty ? [] : state.pending, state.dropped, state.announce)
            }
            if dropped > 0 {
                logger.warning("wake-up relay queue full; wake-ups dropped", metadata: ["dropped": "\(dropped)"])
            }
            // Any message names its sender: wake-ups announce it as well as an empty one.
            let payloads =
                wakes.isEmpty && !announce ? [] : Self.payloads(for: wakes, from: instanceID, logger: logger)
            for payload in payloads {
                var binds = PostgresBindings(capacity: 2)
                binds.append(wakeChannel)
                binds.append(payload)
                try await session.run(Notify.self, binds)
                relayState.withLock { $0.notifies += 1 }
            }
            if wakes.isEmpty && !announce {
                _ = await relayDoorbell.wait(Self.doorbell, after: ticket, timeout: .seconds(60))
                try Task.checkCancellation()
            }
        }
    }

    /// Sends one wake-up notification (`$2`) on the channel `$1`.
    enum Notify: NamedStatement {
        static let name = "hub_notify"
        static let sql = "SELECT pg_notify($1::text, $2::text)"
    }

    /// The NOTIFY payloads carrying `wakes`, each under ``payloadLimit`` bytes; for no wake-ups,
    /// one payload that only names `instance` (an announcement).
    static func payloads(for wakes: [Wake], from instance: String, logger: Logger) -> [String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(WakeMessage(from: instance, wakes: wakes)) else { return [] }
        if data.count <= payloadLimit { return [String(decoding: data, as: UTF8.self)] }
        guard wakes.count > 1 else {
            logger.warning("a wake-up is too large to relay", metadata: ["app": "\(wakes[0].app)"])
            return []
        }
        let half = wakes.count / 2
        return payloads(for: Array(wakes[..<half]), from: instance, logger: logger)
            + payloads(for: Array(wakes[half...]), from: instance, logger: logger)
    }

    /// Checks every ``heartbeatInterval`` that the connection answers within
    /// ``heartbeatTimeout`` (the session's statement deadline, which closes the connection when
    /// missed); throws when it does not: a connection that died without closing never ends a LISTEN.
    /// Its query lists the instances whose wake-up connection is open: peers no longer among them
    /// are forgotten (an instance that stopped or lost its connection; it announces itself again
    /// when it listens again).
    private func heartbeat(_ session: Session) async throws {
        while true {
            try await configuration.clock.sleep(until: configuration.clock.now + Self.heartbeatInterval, tolerance: nil)
            let open = Set(
                try await session.rows(PostgresQuery(unsafeSQL: Self.wakeConnectionsSQL)).compactMap { row in
                    try row.decode(String?.self)
                })
            relayState.withLock { $0.peers.formIntersection(open) }
        }
    }

    /// The instance IDs of the wake-up connections open on the server (their `application_name`
    /// ends in `[wake-ups ID]`, see ``Configuration/client(connections:role:serverTimeouts:host:)``;
    /// other schemas' too, which only keeps a peer that left longer).
    static let wakeConnectionsSQL = """
        SELECT substring(application_name FROM '\\[wake-ups ([0-9a-z]+)\\]$') FROM pg_stat_activity
        WHERE application_name LIKE '%[wake-ups %]'
        """

    /// Wakes the local waiters a notification from another instance names, and counts its sender
    /// as a peer (answering a new one with a message of its own, so that it learns of this one).
    func received(_ payload: String) {
        guard let message = try? JSONDecoder().decode(WakeMessage.self, from: Data(payload.utf8)) else {
            logger.debug("ignored a malformed wake-up notification")
            return
        }
        guard message.from != instanceID else { return }
        let (signals, newcomer) = relayState.withLock { state in
            let newcomer = state.peers.insert(message.from).inserted
            if newcomer { state.announce = true }
            return (state.target, newcomer)
        }
        if newcomer { relayDoorbell.ring(Self.doorbell) }
        guard let signals else { return }
        for wake in message.wakes { signals.receive(wake.key, wake.audience) }
    }
}

// MARK: - Diagnostics

extension PostgresStore {
    /// Ends this store's LISTEN connection from the server side, as a failing network or a
    /// restarting server would (for tests of the reconnect).
    /// - Returns: how many connections were ended.
    func terminateWakeConnection() async throws -> Int {
        try await rows(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name LIKE \("%wake-ups \(instanceID)%")
            """
        ).count
    }

    /// How many other instances this store sends wake-ups to: those it heard announce themselves
    /// on its channel (see ``relay(into:)``). Wake-ups are sent only while there is one; a
    /// program that starts several instances at once waits for them to know each other.
    public var relayPeerCount: Int { relayState.withLock { $0.peers.count } }

    /// NOTIFYs this store sent, and wake-ups it left unsent because no other instance listened.
    var relayCounts: (notifies: Int, unsent: Int) { relayState.withLock { ($0.notifies, $0.unsent) } }

    /// How many connections of this store LISTEN for wake-ups right now (0 or 1).
    func wakeConnectionCount() async throws -> Int {
        guard relayState.withLock({ $0.listening }) else { return 0 }
        return try await rows(
            """
            SELECT pid FROM pg_stat_activity WHERE application_name LIKE \("%wake-ups \(instanceID)%")
            """
        ).count
    }
}
