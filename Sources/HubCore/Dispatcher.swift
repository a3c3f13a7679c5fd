import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Works the durable outbox as a stream.
///
/// - **Lanes.** Each transport has a lane with its own concurrency: the lane claims due
///   deliveries of that transport as its send slots free up (never waiting for a batch to finish),
///   so a provider that stalls holds back only its own deliveries. One more lane takes the
///   deliveries of transports this hub does not run and suspends them (a configuration fault:
///   they go out once a hub that runs the transport starts).
/// - **Leases.** Claims are short leases that the dispatcher renews while a send is in flight or
///   its outcome is not yet written, so a crashed instance's deliveries are taken over quickly.
/// - **Outcomes** (delivered, retried with back-off, endpoint gone, rejected, given up, suspended)
///   are written in batches by one recorder. A suspended delivery (a configuration fault) is
///   parked in the store, not finished; the hub un-parks them when it starts again.
/// - **Store faults** never stop it: claims, renewals and writes that fail are tried again with a
///   capped back-off (the hub's ``DeadlineStore`` bounds each call), logged once per episode;
///   outcomes not yet written are kept and written once the store answers again.
///
/// - **Fair shares.** Inside a lane no app, user or destination host may hold every slot, and a
///   host that cannot be reached is backed off (see ``LaneShares``).
///
/// Graceful shutdown stops claiming, lets in-flight sends finish (for at most
/// ``DispatcherConfiguration/shutdownDrainTimeout``; then the rest are cancelled and retried by
/// the next start), writes their outcomes (for at most
/// ``DispatcherConfiguration/shutdownFlushTimeout``), then returns; deliveries still queued stay
/// in the store for the next start (at-least-once).
final class Dispatcher: Sendable {
    let store: any Store
    let router: Router
    let configuration: DispatcherConfiguration
    let instanceID: String
    let logger: Logger
    /// What the lanes, the lease keeper and the recorder wait on, and the outcomes' timestamps.
    let clock: any HubClock
    /// Rings lanes: pokes (new deliveries may be due) and freed send slots.
    let bells: Bells
    let lanes: [Lane]
    /// The deliveries this instance holds leases on: sending, or outcome not yet written.
    let leased = Mutex<Set<Int64>>([])
    let recorder: OutcomeRecorder
    /// Counts each send's outcome for the statistics over time.
    let statistics: StatisticsAccumulator
    let faults: StoreFaults
    /// The (app, transport) suspensions already logged at error level.
    let suspensionsReported = Mutex<Set<String>>([])
    /// One send at a time per endpoint of an app with badges (see ``SendTurns``).
    let turns = SendTurns()
    /// When the pending delayed poke (``poke(after:)``) rings, if one is pending.
    let delayedPoke = Mutex<ContinuousClock.Instant?>(nil)
    /// Each send's duration and outcome, counted in metrics.
    let metrics = DeliveryMetrics()

    init(
        store: any Store, router: Router, configuration: DispatcherConfiguration, instanceID: String,
        logger: Logger, clock: any HubClock, statistics: StatisticsAccumulator
    ) {
        self.statistics = statistics
        self.store = store
        self.router = router
        self.configuration = configuration
        self.instanceID = instanceID
        self.logger = logger
        self.clock = clock
        let bells = Bells(clock: clock)
        self.bells = bells
        let transports = router.transportIDs
        self.lanes =
            transports.map { id in
                let preferred = router.transport(id)?.preferredConcurrency
                return Lane(
                    .transport(id), concurrency: configuration.concurrency(for: id, preferred: preferred),
                    configuration: configuration)
            }
            // Webhook events are never a stray's: only the webhook lane's claim reads them.
            + [Lane(.otherThan(Set(transports).union([.webhooks])), concurrency: 4, configuration: configuration)]
        self.faults = StoreFaults(logger: logger)
        self.recorder = OutcomeRecorder(bells: bells)
    }

    /// Tells the dispatcher that new deliveries may be due. The lane of transports this hub does
    /// not run is not poked: it looks for strays on its own, every `10 × idleInterval`.
    func poke() {
        for lane in lanes where !lane.isStrayLane { poke(lane) }
    }

    /// Counts a poke of `lane` (rows may wait for its claim) and wakes it.
    private func poke(_ lane: Lane) {
        lane.pokes.add(1, ordering: .releasing)
        bells.ring(lane.pokeBell)
    }

    /// Pokes the lanes `delay` from now: for deliveries planned to come due then (a badge app's
    /// state-change taps, ``DeliveryPlanner/badgeUpdateWindow``), which the lanes' idle interval
    /// would otherwise find up to a second late. One delayed poke is pending at a time: a later
    /// one asked for while it waits is covered by it, as the taps it is for merge into the tap
    /// due first.
    func poke(after delay: Duration) {
        let deadline = clock.now + delay
        let scheduled = delayedPoke.withLock { pending -> Bool in
            if let pending, pending <= deadline { return false }
            pending = deadline
            return true
        }
        guard scheduled else { return }
        let clock = self.clock
        Task { [self] in
            try? await clock.sleep(until: deadline, tolerance: nil)
            delayedPoke.withLock { pending in if pending == deadline { pending = nil } }
            poke()
        }
    }

    /// Tells the webhook lane that events may be due (they were enqueued).
    func pokeWebhooks() {
        for lane in lanes where lane.selection == .transport(.webhooks) { poke(lane) }
    }

    func run() async {
        logger.info(
            "dispatcher started",
            metadata: [
                "instance": "\(instanceID)",
                "lanes": "\(lanes.map { "\($0.name):\($0.concurrency)" }.joined(separator: ","))",
            ])
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.runRecorder() }
                group.addTask { await self.keepLeases() }
                await withTaskGroup(of: Void.self) { lanes in
                    for lane in self.lanes { lanes.addTask { await self.run(lane) } }
                }
                // Every send has returned; write what is left, then stop the helpers.
                self.recorder.close()
                await group.waitForAll()
            }
        } onGracefulShutdown: {
            self.wakeAll()
        }
        logger.info("dispatcher stopped", metadata: ["instance": "\(instanceID)"])
    }

    /// The wall-clock time, for timestamps.
    func now() -> Date { clock.date }

    /// Whether every lane, the lease keeper and the recorder wait on their bells: nothing runs
    /// until a poke, a hand-off or the clock wakes the dispatcher (tests with a manual clock).
    var isIdle: Bool { bells.waiterCount >= lanes.count + 2 }

    var stopping: Bool { Task.isShuttingDownGracefully || Task.isCancelled }

    func wakeAll() {
        for lane in lanes {
            bells.ring(lane.pokeBell)
            bells.ring(lane.slotBell)
        }
        recorder.ring()
    }

    /// Sleeps for `duration` unless shutdown begins or `key` rings after `ticket`.
    func pause(_ duration: Duration, on bell: Bell, after ticket: UInt64) async {
        guard duration > .zero, !stopping else { return }
        _ = await bells.wait(bell, after: ticket, timeout: duration)
    }

    // MARK: Sending one delivery

    /// Sends one claimed delivery through its transport and says how to record it, with the
    /// provider's message ID when it gave one, and why its host could not be reached if it could not.
    func process(
        _ claimed: ClaimedDelivery
    ) async -> (change: OutboxOutcome.Change, messageId: String?, unreachable: String?) {
        let delivery = claimed.delivery
        let endpoint = claimed.endpoint
        guard let app = router.apps[delivery.appId] else {
            return (
                .finish(.rejected, detail: "the app '\(delivery.appId)' is no longer configured", goneSince: nil), nil,
                nil
            )
        }
        if let reason = Self.skipReason(claimed, now: now()) {
            return (.finish(.superseded, detail: reason, goneSince: nil), nil, nil)
        }
        guard let transport = router.transport(endpoint.transport) else {
            // A configuration fault (credentials missing or refused at start): park, never drop.
            let reason =
                "the \(endpoint.transport) transport is not enabled on this hub: give the app its credentials "
                + "for it and restart"
            reportSuspension(app: app.id, transport: endpoint.transport, reason: reason)
            return (.suspend(reason: reason), nil, nil)
        }
        let started = clock.now
        // With badges, one send per endpoint at a time: the count is read in the turn, so a
        // later send never carries an older count than the one before it, nor overtakes it.
        let turn = app.delivery.badge == nil ? nil : "\(app.id)\u{0}\(endpoint.userId)\u{0}\(endpoint.id)"
        if let turn { await turns.acquire(turn) }
        let outbound = OutboundDelivery(
            delivery: delivery, endpoint: endpoint, app: app,
            notification: delivery.kind == .shoulderTap ? nil : Self.content(of: claimed),
            badge: await badge(for: endpoint, of: app), event: claimed.event)
        let reply = await transport.transmit(outbound)
        if let turn { turns.release(turn) }
        let outcome = reply.outcome
        metrics.record(transport: endpoint.transport, outcome: outcome, nanoseconds: (clock.now - started).nanoseconds)
        return (change(for: outcome, of: delivery, to: endpoint, app: app), reply.messageId, reply.unreachable)
    }

    /// The user's badge on `endpoint`'s platform when `app` shows the hub's count, read just before
    /// the send so that a tap merged from a burst of reads carries the count after the last one.
    /// A failed read sends the push without a badge (the next change sends it again).
    private func badge(for endpoint: Endpoint, of app: CrossDeviceApp) async -> Int? {
        guard app.delivery.badge == .unread else { return nil }
        do {
            return try await store.badgeCount(
                FeedKey(appId: app.id, userId: endpoint.userId), platform: endpoint.platform)
        } catch {
            logger.warning(
                "reading the badge count failed; sending without it",
                metadata: ["app": "\(app.id)", "endpoint": "\(endpoint.id)", "error": "\(error)"])
            return nil
        }
    }

    /// How to record `outcome` of `delivery`.
    private func change(
        for outcome: DeliveryOutcome, of delivery: Delivery, to endpoint: Endpoint, app: CrossDeviceApp
    ) -> OutboxOutcome.Change {
        let transportLabel = endpoint.transport.rawValue
        switch outcome {
        case .accepted:
            return .finish(.delivered, detail: nil, goneSince: nil)
        case .rejected(let reason):
            logger.warning(
                "delivery rejected; not retried",
                metadata: ["endpoint": "\(endpoint.id)", "transport": "\(transportLabel)", "reason": "\(reason)"])
            return .finish(.rejected, detail: reason, goneSince: nil)
        case .endpointGone(let since, let reason):
            logger.info(
                "endpoint gone",
                metadata: ["endpoint": "\(endpoint.id)", "transport": "\(transportLabel)", "reason": "\(reason)"])
            return .finish(.endpointGone, detail: reason, goneSince: since)
        case .retry(let after, let reason):
            return retry(delivery, after: after, reason: reason)
        case .suspended(let reason):
            reportSuspension(app: app.id, transport: endpoint.transport, reason: reason)
            return .suspend(reason: reason)
        }
    }

    /// Logs the first suspension of each app and transport at error level, with the reason (what
    /// to fix); later ones at debug level (reasons may carry per-request details such as message
    /// IDs, so they are not part of the key). A restart logs again. The lane goes on with other deliveries:
    /// a fault in one app's credentials must not hold back the other apps of the transport.
    private func reportSuspension(app: String, transport: TransportID, reason: String) {
        let first = suspensionsReported.withLock { $0.insert("\(app)|\(transport)").inserted }
        let metadata: Logger.Metadata = ["app": "\(app)", "transport": "\(transport)", "reason": "\(reason)"]
        if first {
            logger.error(
                """
                deliveries suspended: the provider refuses this app's configuration (see reason); they stay \
                queued and go out when the hub is restarted with the configuration fixed
                """,
                metadata: metadata)
        } else {
            logger.debug("delivery suspended", metadata: metadata)
        }
    }

    /// Why a claimed delivery need not be sent any more, if so. Content is never sent past its
    /// notification's expiration, even before the sweep has marked it expired.
    static func skipReason(_ claimed: ClaimedDelivery, now: Date) -> String? {
        let delivery = claimed.delivery
        if delivery.kind != .shoulderTap, let notification = claimed.notification,
            notification.status == .active, notification.expirationDateTime <= now
        {
            return "the notification expired"
        }
        switch delivery.kind {
        case .visible:
            guard let notification = claimed.notification, notification.status == .active else {
                return "the notification is no longer active"
            }
        case .fallback:
            guard let notification = claimed.notification, notification.status == .active,
                notification.readState == .unread, notification.userActionState == .noInteraction
            else { return "the notification was handled on a device" }
            if let synced = claimed.endpoint.lastSyncAt, synced >= delivery.createdAt {
                return "the endpoint synced in time"
            }
        default:
            break
        }
        return nil
    }

    /// The notification a visible or fallback delivery renders: a fallback shows its policy's own
    /// `visualContent` when it has one (Graph's `endpointFallback.visualContent`).
    static func content(of claimed: ClaimedDelivery) -> UserNotification? {
        guard var notification = claimed.notification else { return nil }
        if claimed.delivery.kind == .fallback, let visual = notification.fallbackPolicy?.visualContent {
            notification.payload.visualContent = visual
        }
        return notification
    }

    /// Another attempt after a back-off, or `gaveUp` when attempts or age ran out.
    func retry(_ delivery: Delivery, after: Duration?, reason: String) -> OutboxOutcome.Change {
        let current = now()
        let age = current.timeIntervalSince(delivery.createdAt)
        // Webhook events are retried for the whole age (a day by default), however many attempts
        // that takes: a receiver that is down for hours still gets them.
        let attemptsRanOut = delivery.kind != .webhook && delivery.attempts >= configuration.maxAttempts
        if attemptsRanOut || age >= configuration.maxAge.seconds {
            let why = "gave up after \(delivery.attempts) attempts over \(Int(age)) s; last error: \(reason)"
            logger.warning("delivery given up", metadata: ["endpoint": "\(delivery.endpointId)", "reason": "\(why)"])
            return .finish(.gaveUp, detail: why, goneSince: nil)
        }
        let delay = Self.backoff(attempt: delivery.attempts, retryAfter: after, configuration: configuration)
        return .retry(dueAt: current.addingTimeInterval(delay.seconds), error: reason)
    }

    /// Exponential back-off with ±20 % jitter; a provider's `Retry-After` is a floor.
    static func backoff(attempt: Int, retryAfter: Duration?, configuration: DispatcherConfiguration) -> Duration {
        let exponent = Double(max(0, min(attempt - 1, 30)))
        let base = min(configuration.initialBackoff.seconds * pow(2, exponent), configuration.maxBackoff.seconds)
        let jittered = base * Double.random(in: 0.8...1.2)
        let floor = retryAfter?.seconds ?? 0
        return .milliseconds(Int64(max(jittered, floor) * 1000))
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
