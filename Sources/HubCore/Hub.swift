public import Foundation
public import Logging
import Metrics
public import ServiceLifecycle
import Synchronization

/// The embeddable hub: publish notifications for users, register their endpoints, sync feeds and
/// keep read / dismissed state in step across devices. Run it (it is a `Service`) to dispatch the
/// outbox and sweep expired notifications.
///
/// ```swift
/// let hub = try Hub(configuration: HubConfiguration(apps: apps), store: store,
///                   transports: [PollingTransport(signals: signals)], signals: signals, logger: logger)
/// let group = ServiceGroup(services: [hub, server], logger: logger)
/// try await group.run()
/// ```
public final class Hub: Service, Sendable {
    public let configuration: HubConfiguration
    /// The store, every call bounded by ``HubConfiguration/storeTimeout`` (a ``DeadlineStore``).
    public let store: any Store
    /// The delivery rules every change of a notification is planned with.
    public let planner: DeliveryPlanner
    public let router: Router
    /// Hears every committed change of a feed: the polling plugin's waiting room (`FeedSignals`),
    /// which wakes the long-polls and event streams waiting for it.
    public let signals: any FeedChangeListener
    public let logger: Logger
    /// The hub's clock: its sweeper, dispatcher and statistics wait on it, and every timestamp
    /// it stores comes from it (``now``).
    public let clock: any HubClock
    /// The wall-clock time of ``clock``: every timestamp the hub stores comes from here.
    public let now: @Sendable () -> Date
    let dispatcher: Dispatcher
    /// Publishes and send outcomes counted since the last flush to the store (`Hub+Statistics.swift`).
    let accumulator: StatisticsAccumulator
    /// When each polling endpoint's sync was last written, so a busy endpoint costs one write per
    /// ``syncRecordInterval``, not one per long-poll.
    let recordedSyncs = Mutex<[EndpointRef: Date]>([:])
    /// The earliest release of a notification this instance published scheduled, or read from the
    /// store at its last sweep: when the sweeper runs next (see `Hub+Service.swift`).
    let releases = ReleaseSchedule()
    /// Wakes the broadcast expander (a broadcast created here); `Hub+Broadcasts.swift`.
    let broadcastBells: Bells
    /// A polling endpoint's `lastSyncAt` is written at most this often (it is informational:
    /// fallback alerts only go to push endpoints, whose syncs are always written).
    static let syncRecordInterval: TimeInterval = 5

    /// Creates a hub; it dispatches nothing until it runs as a service.
    ///
    /// - Parameters:
    ///   - configuration: the apps, limits and dispatcher settings.
    ///   - store: where notifications, feeds, endpoints and the outbox live (migrated already).
    ///   - transports: the transport plugins endpoints may name; one per ``TransportID``.
    ///   - signals: what the hub announces its committed changes of feeds to: the polling plugin's
    ///     waiting room (`FeedSignals`, made with the same `clock` and shared with the polling
    ///     transport), which long-polls and event streams wait in. By default nobody listens (a hub
    ///     whose clients do not wait for changes).
    ///   - logger: where the hub and its dispatcher log.
    ///   - clock: the clock the hub waits on and takes its timestamps from; tests inject a manual one.
    /// - Throws: ``HubError`` when apps conflict (one platform app ID in two apps).
    public init(
        configuration: HubConfiguration,
        store: any Store,
        transports: [any Transport],
        signals: (any FeedChangeListener)? = nil,
        logger: Logger = Logger(label: "hub"),
        clock: any HubClock = SystemClock()
    ) throws {
        self.configuration = configuration
        let store = DeadlineStore(store, StoreDeadline(timeout: configuration.storeTimeout))
        self.store = store
        self.planner = DeliveryPlanner(
            transports: transports, badgeApps: Set(configuration.apps.filter { $0.delivery.badge != nil }.map(\.id)))
        self.router = try Router(apps: configuration.apps, transports: transports)
        self.signals = signals ?? NoFeedChangeListener()
        self.logger = logger
        self.clock = clock
        self.now = { clock.date }
        self.broadcastBells = Bells(clock: clock)
        let accumulator = StatisticsAccumulator()
        self.accumulator = accumulator
        self.dispatcher = Dispatcher(
            store: store, router: router, configuration: configuration.dispatcher,
            instanceID: configuration.instanceID, logger: logger, clock: clock, statistics: accumulator)
    }

    /// The configured app, or a `notFound` error naming it.
    public func app(_ id: String) throws(HubError) -> CrossDeviceApp {
        guard let app = router.apps[id] else {
            try Identifier.check(id, field: "app")
            throw HubError(.notFound, "No app '\(id)' is configured on this hub.")
        }
        return app
    }

    /// The feed of `userID` in the configured app `appID`.
    /// - Throws: ``HubError`` `not-found` for an unknown app, `invalid-request` naming `userId`
    ///   when the user ID is not an ``Identifier``.
    func feedKey(_ appID: String, _ userID: String) throws(HubError) -> FeedKey {
        let app = try app(appID)
        try Identifier.check(userID, field: "userId")
        return FeedKey(appId: app.id, userId: userID)
    }

    // MARK: Notifications (publishing: Hub+Publishing.swift)

    /// Marks a notification deleted; devices see a tombstone in their feed.
    public func deleteNotification(
        app appID: String, user userID: String, id: String
    ) async throws
        -> UserNotification
    {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "id")
        guard let tombstone = try await store.delete(key, appNotificationId: id, at: now(), planner: planner) else {
            throw HubError(.notFound, "No notification '\(id)' for this user.")
        }
        await changed(key, version: tombstone.changeVersion)
        return tombstone
    }

    /// The user's notifications, newest first, as `reader` sees them now (``NotificationView``):
    /// a device of a platform gets only those targeting it; ``HistoryFilter/asOf`` is now unless given.
    public func history(
        app appID: String, user userID: String, filter: HistoryFilter = HistoryFilter(),
        reader: NotificationView.Reader = .publisher
    )
        async throws -> [UserNotification]
    {
        let key = try feedKey(appID, userID)
        var filter = filter
        let view = NotificationView(now: filter.asOf ?? now(), reader: reader)
        filter.platform = view.platform ?? filter.platform
        filter.asOf = view.now
        return view.history(try await store.history(key, filter: filter), filter: filter)
    }

    /// One notification as `reader` sees it now (``NotificationView``); one the reader does not
    /// see (another platform's, a device reading a scheduled one) is not found.
    public func notification(
        app appID: String, user userID: String, id: String, reader: NotificationView.Reader = .publisher
    ) async throws -> UserNotification {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "id")
        let view = NotificationView(now: now(), reader: reader)
        guard let found = try await store.notification(key, id: id), view.shows(found) else {
            throw HubError(.notFound, "No notification '\(id)' for this user.")
        }
        return view.render(found)
    }

    // MARK: Devices

    /// Changes read / action state from a device; the user's other endpoints are tapped.
    public func updateState(
        app appID: String, user userID: String, id: String, readState: ReadState?,
        userActionState: UserActionState?, fromEndpoint endpoint: String?
    ) async throws -> UserNotification {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "id")
        var errors: [HubError.FieldError] = []
        if readState == nil && userActionState == nil {
            errors.append(.init(field: "readState", message: "give readState and/or userActionState"))
        }
        if let readState, !ReadState.known.contains(readState) {
            errors.append(.init(field: "readState", message: "must be one of unread, read"))
        }
        if let userActionState, !UserActionState.known.contains(userActionState) {
            errors.append(
                .init(field: "userActionState", message: "must be one of noInteraction, activated, dismissed, snoozed"))
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        let change = StateChange(
            key: key, id: id, readState: readState, userActionState: userActionState, exceptEndpoint: endpoint,
            now: now(), planner: planner)
        guard let updated = try await store.updateState(change) else {
            throw HubError(.notFound, "No notification '\(id)' for this user.")
        }
        await changed(key, version: updated.changeVersion, except: endpoint)
        // A badge app's taps for the change come due after the window (a burst merges into them).
        if planner.badgeApps.contains(key.appId) {
            dispatcher.poke(after: .seconds(DeliveryPlanner.badgeUpdateWindow))
        }
        await enqueueWebhookEvents(
            WebhookEvent.events(stateChange: updated, before: nil, key: key, endpoint: endpoint, at: change.now),
            app: appID)
        return updated
    }

    /// The app icon badge of the user's devices of `platform` (``BadgeCount``: the active, unread,
    /// undismissed notifications that target it) when the app shows the hub's count
    /// (``DeliveryPolicy/badge``); `nil` when it does not.
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - platform: the device's platform.
    public func badge(app appID: String, user userID: String, platform: Platform) async throws -> Int? {
        let key = try feedKey(appID, userID)
        guard try app(appID).delivery.badge != nil else { return nil }
        return try await store.badgeCount(key, platform: platform)
    }

    /// Enqueues `events` for the app's webhooks that subscribe to them, and wakes the webhook lane.
    /// The change they report is committed already: a failure to enqueue is logged (the event is
    /// lost), never answered to the device, whose change stands.
    func enqueueWebhookEvents(_ events: [WebhookEvent], app appID: String) async {
        guard !events.isEmpty, let app = router.apps[appID], !app.webhooks.isEmpty else { return }
        let rows = WebhookEvent.rows(events, for: app)
        guard !rows.isEmpty else { return }
        do {
            try await store.enqueueWebhookEvents(rows, at: now())
            dispatcher.pokeWebhooks()
        } catch {
            logger.error(
                "webhook events not enqueued",
                metadata: ["app": "\(appID)", "types": "\(events.map(\.type.rawValue))", "error": "\(error)"])
        }
    }

    /// Changes after `version`: one read, which never waits (a long-poll waits in the polling
    /// plugin's waiting room, `FeedSignals`, and reads again when woken). With `endpoint` (a
    /// polling endpoint), the read is recorded as that endpoint's sync.
    ///
    /// The page is what a reader of `platform` (a device's; `nil` for every platform) sees now
    /// (``NotificationView``); its cursor moves past the changes it leaves out.
    public func feed(
        app appID: String, user userID: String, after version: Int64, limit: Int = 100,
        endpoint: String? = nil, platform: Platform? = nil
    ) async throws -> FeedPage {
        let key = try feedKey(appID, userID)
        let page = try await store.feed(key, after: version, limit: min(max(limit, 1), 1000))
        if let endpoint { recordSync(key, endpoint: endpoint) }
        return NotificationView(now: now(), reader: .device(platform)).page(page)
    }

    /// Records that a push endpoint synced its feed (its fallback alerts are then not needed).
    public func recordSync(app appID: String, user userID: String, endpoint: String) async throws {
        try await store.touchEndpoint(try feedKey(appID, userID), id: endpoint, syncedAt: now())
    }

    /// Whether the store answers within `timeout`; throws `HubError(.unavailable)` if not. The
    /// default leaves room for the deadline watchdog's granularity, so /readyz answers within 1 s.
    public func checkReadiness(timeout: Duration = .milliseconds(900)) async throws {
        let store = self.store
        _ = try await StoreDeadline(timeout: timeout).intercept("nextDueDate") { try await store.nextDueDate() }
    }

    /// Writes a polling endpoint's sync time unless it was written less than
    /// ``syncRecordInterval`` ago, without holding up the page: the time is informational, and a
    /// woken long-poll that waited for this write waited for a commit of its own (issue 43). A
    /// write that fails is logged; a sync after the interval writes it again.
    private func recordSync(_ key: FeedKey, endpoint: String) {
        let current = now()
        let ref = EndpointRef(key: key, id: endpoint)
        let due = recordedSyncs.withLock { recorded -> Bool in
            if let last = recorded[ref], current.timeIntervalSince(last) < Self.syncRecordInterval,
                current >= last
            {
                return false
            }
            if recorded.count >= 100_000 {
                recorded = recorded.filter { current.timeIntervalSince($0.value) < Self.syncRecordInterval }
            }
            recorded[ref] = current
            return true
        }
        guard due else { return }
        let store = self.store
        let logger = self.logger
        Task {
            do {
                try await store.touchEndpoint(key, id: endpoint, syncedAt: current)
            } catch {
                logger.warning(
                    "writing a polling endpoint's sync time failed",
                    metadata: ["app": "\(key.appId)", "endpoint": "\(endpoint)", "error": "\(error)"])
            }
        }
    }

    /// After a committed change of the feed (its change `version`, `nil` when several or unknown):
    /// wakes its anonymous waiters and the user's polling endpoints (but `except`, the endpoint
    /// that made the change; for a publish only those on the platforms it targets), and pokes the
    /// dispatcher for the taps to push endpoints (not after a publish that left none for a claim:
    /// its deliveries were handed off to this instance's lanes).
    ///
    /// Polling endpoints have no outbox rows: waking them is in-process (and relayed to other
    /// instances by a shared store), so it costs no write. A wake-up lost in a crash costs nothing
    /// either: the device's long-poll dies with the process, and its next sync reads the feed from
    /// its cursor. A change for every platform wakes the waiting requests of the feed without
    /// reading its endpoints: only endpoints with a request waiting can be woken at all.
    func changed(
        _ key: FeedKey, version: Int64?, except: String? = nil, targeting policy: TargetPolicy = TargetPolicy(),
        pokeDispatcher: Bool = true
    ) async {
        signals.committed(key, version: version)
        if pokeDispatcher { dispatcher.poke() }
        guard policy.restrictsPlatforms else {
            let woken = signals.announce(key, .everyone(except: except))
            if woken > 0 { Counter(label: "hub_polling_wakes_total").increment(by: woken) }
            return
        }
        signals.announce(key, .feed)
        let endpoints: [Endpoint]
        do {
            endpoints = try await store.endpoints(key)
        } catch {
            logger.warning(
                "reading the endpoints to wake failed; their long-polls wake at their timeout",
                metadata: ["app": "\(key.appId)", "error": "\(error)"])
            return
        }
        var woken = 0
        for endpoint in endpoints
        where router.wakesInProcess(endpoint.transport) && endpoint.state == .active && endpoint.id != except
            && policy.includes(endpoint.platform)
        {
            woken += signals.announce(key, .endpoint(endpoint.id))
        }
        if woken > 0 { Counter(label: "hub_polling_wakes_total").increment(by: woken) }
    }
}

/// One endpoint of one user's feed.
struct EndpointRef: Hashable, Sendable {
    let key: FeedKey
    let id: String
}
