public import struct Foundation.Date

/// Durable storage of notifications, feeds, endpoints and the delivery outbox.
///
/// Every method is one transaction: when it returns, its changes are durable (a publish that
/// returned is never lost). Implementations: `HubSQLite.SQLiteStore` (embedded default) and
/// `HubPostgres` (several hub instances on one database). `HubTesting.StoreConformance` checks the
/// semantics below; every store must pass it.
///
/// Semantics every store shares, beyond each method's summary:
/// - Change versions come from one store-wide counter; every change of a notification (create,
///   update, state change, delete, expiry) takes the next value. The notifications a sweep
///   releases or expires take theirs in the order of their previous versions.
/// - Which deliveries a change enqueues is the ``DeliveryPlanner``'s decision, never the store's;
///   the store persists the plan in the change's transaction.
/// - A planned tap to an endpoint coalesces with that endpoint's pending, unleased tap (newest
///   version, higher priority, earlier due time). A tap put back by a retry while a newer
///   unleased tap waits is finished as `superseded` instead.
/// - ``EndpointStore/upsertEndpoint(_:limit:)`` keeps the stored `lastSyncAt` when the incoming one is `nil`.
/// - An `endpointGone` result without a provider time compares the endpoint's `registeredAt` with
///   the delivery's claim time; `inactiveSince` is then the finish time.
/// - `UserNotification.deliveryMode` is the publisher's per-notification override, not the app default.
/// - State changes apply to tombstones too (a device may mark an expired notification read).
/// - Statistics over time (``StatisticsStore``) have defaults that throw `unsupported`, so a
///   store written before them still compiles; the sweep also purges their expired buckets.
/// - User tags and broadcasts (``AudienceStore``) have defaults that throw `unsupported` (and
///   lease no broadcast chunk).
///
/// It is a composition of small protocols, each a part a store can be written and checked
/// against on its own (`HubTesting.StoreConformance.groups` names the checks of each):
/// ``FeedStore`` (6 requirements), ``FeedReader`` (3), ``EndpointStore`` (7), ``OutboxStore`` (6),
/// ``DeliveryReportStore`` (3), ``StatisticsStore`` (3), ``AudienceStore`` (8), ``UserDataStore`` (a user's export and
/// erasure) and ``WebhookStore`` (webhook events), and ``migrate()``. The last two have defaults
/// that throw `unsupported`.
public protocol Store: FeedStore, FeedReader, EndpointStore, OutboxStore, DeliveryReportStore, StatisticsStore,
    AudienceStore, UserDataStore, WebhookStore
{
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws
}

/// Changes of notifications and their feeds. Every change of a notification enqueues, in its own
/// transaction, the deliveries its request's ``DeliveryPlanner`` plans for the user's endpoints.
public protocol FeedStore: Sendable {
    /// Upserts the notification `(app, user, appNotificationId)`, gives it a new change version and,
    /// in the same transaction, enqueues what `request.planner` plans for the user's endpoints.
    /// With a `request.handOff`, the deliveries it enqueues that are due at once and go by one of
    /// its transports are leased to its owner in the same transaction and returned (see ``HandOff``).
    /// - Returns: the stored notification, whether it was created (`false`: updated), and the
    ///   deliveries handed off.
    func publish(_ request: PublishRequest) async throws -> PublishResult

    /// Publishes several notifications, each exactly as ``publish(_:)`` would, in request order:
    /// a later request for the same `(app, user, appNotificationId)` updates what an earlier one
    /// stored, and every request's change version and new deliveries are numbered after the
    /// earlier requests', whatever their feeds (``OutboxMachine/batchSegments(_:)`` says which
    /// requests one statement may write together). Stores write a batch in as few transactions
    /// as they can (batch publish and the chunks of a broadcast come here); when this returns,
    /// every one is durable. The default publishes them one by one.
    /// - Returns: one result per request, in request order.
    func publish(batch requests: [PublishRequest]) async throws -> [PublishResult]

    /// Whether the store writes one transaction at a time, so that a ``publish(batch:)`` holds
    /// back every other write while it runs (SQLite's single writer). Then a broadcast chunk is
    /// published in parts of ``BroadcastConfiguration/usersPerWrite`` users, so that a single
    /// publish waits for one part at most; otherwise (PostgreSQL, where a batch locks only its
    /// own users' feeds) a chunk is one call. The default is `true`.
    var writesOneAtATime: Bool { get }

    /// Marks a notification deleted (a tombstone in the feed) and enqueues the planned taps.
    /// - Returns: the tombstone, or `nil` if no such notification.
    func delete(
        _ key: FeedKey, appNotificationId: String, at now: Date, planner: DeliveryPlanner
    ) async throws -> UserNotification?

    /// Changes read / action state, bumps the change version, and enqueues the planned taps (the
    /// user's other endpoints). Returns `nil` if no such notification.
    func updateState(_ change: StateChange) async throws -> UserNotification?

    /// Releases `scheduled` notifications whose `scheduledDateTime` passed (active, a feed change,
    /// with the deliveries planned for a publish in their `deliveryMode`), marks notifications
    /// whose expiration passed as expired (a feed change, with the planned taps), and removes
    /// tombstones older than `purgeBefore`, and finished deliveries older than `purgeBefore` whose
    /// notification expired before `purgeBefore` or is gone (receipts outlive their notification
    /// by the retention).
    /// - Returns: the feeds that changed.
    func sweep(now: Date, purgeBefore: Date, planner: DeliveryPlanner) async throws -> Set<FeedKey>

    /// The earliest `scheduledDateTime` of a notification still `scheduled`: when the hub sweeps
    /// next to release it. A store without schedules answers `nil` (the default), and scheduled
    /// notifications then wait for the periodic sweep.
    func nextScheduledRelease() async throws -> Date?

    /// The app icon badge of a device of `platform` for the user of `key`: the user's active,
    /// unread, undismissed notifications that target `platform` (``BadgeCount``). Stores keep the
    /// counters with the feed, in the transaction of every change of a notification (applying
    /// ``BadgeCount/changes(from:to:)``), so this is one read of at most two rows, never a scan of
    /// the notifications. The default throws `unsupported`.
    func badgeCount(_ key: FeedKey, platform: Platform) async throws -> Int
}

extension FeedStore {
    public func nextScheduledRelease() async throws -> Date? { nil }

    public var writesOneAtATime: Bool { true }

    public func badgeCount(_ key: FeedKey, platform: Platform) async throws -> Int {
        throw HubError(.unsupported, "this hub's store keeps no badge counts")
    }

    public func publish(batch requests: [PublishRequest]) async throws -> [PublishResult] {
        var results: [PublishResult] = []
        results.reserveCapacity(requests.count)
        for request in requests { results.append(try await publish(request)) }
        return results
    }

    /// ``delete(_:appNotificationId:at:planner:)`` with the standard planner.
    public func delete(_ key: FeedKey, appNotificationId: String, at now: Date) async throws -> UserNotification? {
        try await delete(key, appNotificationId: appNotificationId, at: now, planner: .standard)
    }

    /// ``sweep(now:purgeBefore:planner:)`` with the standard planner.
    public func sweep(now: Date, purgeBefore: Date) async throws -> Set<FeedKey> {
        try await sweep(now: now, purgeBefore: purgeBefore, planner: .standard)
    }
}

/// Reading notifications and feeds (what devices and publishers read; nothing changes).
public protocol FeedReader: Sendable {
    /// One notification by the hub's ID or the publisher's `appNotificationId`.
    func notification(_ key: FeedKey, id: String) async throws -> UserNotification?

    /// Notifications of a user, newest first.
    func history(_ key: FeedKey, filter: HistoryFilter) async throws -> [UserNotification]

    /// Changes after `version`, oldest first, at most `limit`.
    func feed(_ key: FeedKey, after version: Int64, limit: Int) async throws -> FeedPage
}

/// The devices' endpoints.
public protocol EndpointStore: Sendable {
    /// Registers or refreshes an endpoint. A refresh re-activates an inactive endpoint when its
    /// `registeredAt` is after the time it went inactive.
    ///
    /// When the endpoint is new, the store counts the user's other endpoints in the same
    /// transaction as the insert (leaving out one whose token the new endpoint takes over) and
    /// lets `limit` decide (``EndpointLimit/check(adding:existing:)``), so that concurrent
    /// registrations cannot pass the limit together. A refresh is never refused.
    /// - Parameters:
    ///   - endpoint: the endpoint to register or refresh.
    ///   - limit: how many endpoints the user may have (``EndpointLimit/unlimited`` for none).
    func upsertEndpoint(_ endpoint: Endpoint, limit: EndpointLimit) async throws -> Endpoint
    func endpoint(_ key: FeedKey, id: String) async throws -> Endpoint?
    /// The user's endpoints, ordered by ID. For all of an app's endpoints use ``endpoints(appId:state:)``.
    func endpoints(_ key: FeedKey) async throws -> [Endpoint]
    func endpoints(appId: String, state: EndpointState?) async throws -> [Endpoint]
    /// Up to `limit` of the app's endpoints after `after` (all from the start when `nil`),
    /// optionally only those in `state`, ordered by user, then ID (bytewise).
    /// - Parameters:
    ///   - appId: the app.
    ///   - state: only endpoints in this state; `nil`: all.
    ///   - after: where the page starts (the last endpoint of the previous page); `nil`: the start.
    ///   - limit: the most endpoints to read.
    func endpoints(
        appId: String, state: EndpointState?, after: EndpointPosition?, limit: Int
    ) async throws -> [Endpoint]
    /// Removes an endpoint and its pending deliveries. Returns whether it existed.
    func deleteEndpoint(_ key: FeedKey, id: String) async throws -> Bool
    /// Records that the endpoint synced the feed (for fallback policies).
    func touchEndpoint(_ key: FeedKey, id: String, syncedAt: Date) async throws
}

/// The delivery outbox, worked by the dispatcher: claimed in lanes (one per transport) with
/// leases that the claimer renews while it sends, and finished in batches. Every rule of what
/// these do to a row is ``OutboxMachine``'s (<doc:DeliveryStates>).
public protocol OutboxStore: Sendable {
    /// Leases up to `limit` due deliveries of `lane` to `owner` until `leaseUntil`, each with its
    /// endpoint and notification (one round trip). Expired leases of other owners are taken over.
    /// Which rows and in what order: ``OutboxMachine/claimableSQL(_:now:)``,
    /// ``OutboxMachine/claimOrder``; each claimed row's attempts grow by one
    /// (``OutboxMachine/attempts(afterLease:)``).
    func claimDeliveries(
        _ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery]
    /// Extends `owner`'s leases of the pending deliveries `ids` to `until` (sends still in flight).
    /// Deliveries no longer leased by `owner` are left alone (``OutboxMachine/renewableSQL(_:owner:)``).
    func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws
    /// Records the outcomes of claimed deliveries in one transaction. Unknown or already finished
    /// deliveries are left alone. A delivery's own final answer (any finish but `.endpointGone`) is
    /// recorded before the batch's other outcomes, whose side effects then leave it alone
    /// (``OutboxMachine/isRecordedFirst(_:)``); those apply in the batch's order.
    ///
    /// - A finish ends the delivery. `.endpointGone` also deactivates the endpoint (unless it
    ///   re-registered after `goneSince`, or, without a provider time, after the claim) and
    ///   finishes its other pending deliveries as `superseded`.
    /// - A retry puts the delivery back, due at `dueAt`, lease cleared. A tap put back while a
    ///   newer unleased tap to its endpoint waits is finished as `superseded` instead, passing on
    ///   its priority, and its version, notification and transport if newer
    ///   (``OutboxMachine/supersedingMerge``).
    /// - A release puts the delivery back unsent, due at `dueAt`, lease cleared, one attempt
    ///   fewer (the claim counted one); a released tap is superseded like a retried one.
    /// - A suspension parks the delivery: it stays pending (lease cleared, `lastError` = the
    ///   reason) but no claim takes it until ``resumeSuspended(at:)``; it is counted in
    ///   ``DeliveryStatistics/suspended`` and ``nextDueDate()`` ignores it. A suspended tap put
    ///   back while a newer unleased tap waits is superseded like a retried one. A new tap that
    ///   coalesces into a parked tap un-parks it: the lane tries the endpoint again.
    func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws
    /// Un-parks every suspended delivery (see ``DeliveryOutcome/suspended(reason:)``), due at
    /// `now` at the latest, so that a hub started with fixed configuration sends them. The hub
    /// calls it when it starts.
    /// - Returns: how many deliveries were un-parked.
    @discardableResult
    func resumeSuspended(at now: Date) async throws -> Int
    /// Puts back the deliveries `owner` claimed and never finished (it crashed), so that an instance
    /// restarted under the same name sends them at once, each like a retry that keeps its due time,
    /// in the order they were created. Stores without this wait for the leases.
    func releaseLeases(owner: String) async throws
    /// The earliest due time of a pending delivery, to sleep until.
    func nextDueDate() async throws -> Date?
}

/// What the outbox holds and did, read without changing it: statistics, the outbox's depth, and
/// a notification's receipts.
public protocol DeliveryReportStore: Sendable {
    /// Pending deliveries, and finished ones by transport, then result.
    func deliveryStatistics() async throws -> DeliveryStatistics
    /// The notification `id` (hub ID, else `appNotificationId`) of `key` with its deliveries, for
    /// its receipts; `nil` when there is no such notification. Finished deliveries are kept while
    /// their notification lives and for the retention after (see ``FeedStore/sweep(now:purgeBefore:planner:)``).
    func deliveryTrace(_ key: FeedKey, id: String) async throws -> NotificationTrace?
    /// What `/metrics` reads at every scrape: ``deliveryStatistics()`` without the finished counts
    /// (`finished` is empty), so that a scrape costs the size of the outbox, not of the delivery
    /// history. The default reads ``deliveryStatistics()``; stores with history should do better.
    func outboxDepth() async throws -> DeliveryStatistics
}

extension EndpointStore {
    /// Registers or refreshes an endpoint without a limit on the user's endpoints.
    public func upsertEndpoint(_ endpoint: Endpoint) async throws -> Endpoint {
        try await upsertEndpoint(endpoint, limit: .unlimited)
    }

    /// Reads every endpoint of the app and keeps the page; stores should read only the page.
    public func endpoints(
        appId: String, state: EndpointState?, after: EndpointPosition?, limit: Int
    ) async throws -> [Endpoint] {
        let all = try await endpoints(appId: appId, state: state)
        return Array(all.filter { after?.precedes($0) ?? true }.prefix(limit))
    }
}

extension OutboxStore {
    public func releaseLeases(owner: String) async throws {}
}

extension DeliveryReportStore {
    /// A store without receipts says so.
    public func deliveryTrace(_ key: FeedKey, id: String) async throws -> NotificationTrace? {
        throw HubError(.unavailable, "this hub's store keeps no delivery receipts")
    }

    public func outboxDepth() async throws -> DeliveryStatistics {
        var statistics = try await deliveryStatistics()
        statistics.finished = [:]
        return statistics
    }
}

extension OutboxStore {
    /// Claims from every lane at once.
    public func claimDeliveries(
        limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        try await claimDeliveries(.all, limit: limit, now: now, owner: owner, leaseUntil: leaseUntil)
    }

    /// Finishes one claimed delivery (see ``recordOutcomes(_:)``).
    public func finishDelivery(
        id: Int64, result: DeliveryResult, detail: String?, goneSince: Date?, at now: Date
    ) async throws {
        try await recordOutcomes([
            OutboxOutcome(id: id, .finish(result, detail: detail, goneSince: goneSince), at: now)
        ])
    }

    /// Puts one claimed delivery back for another attempt at `dueAt` (see ``recordOutcomes(_:)``).
    public func retryDelivery(id: Int64, dueAt: Date, error: String, at now: Date) async throws {
        try await recordOutcomes([OutboxOutcome(id: id, .retry(dueAt: dueAt, error: error), at: now)])
    }
}

/// Which deliveries a claim takes.
public enum OutboxLane: Sendable, Hashable {
    /// Every due delivery.
    case all
    /// The deliveries of one transport.
    case transport(TransportID)
    /// The deliveries of any transport but these (those of transports this hub does not run).
    case otherThan(Set<TransportID>)
}

/// How one claimed delivery ended, as the dispatcher records it.
public struct OutboxOutcome: Sendable, Hashable {
    public enum Change: Sendable, Hashable {
        /// Done: delivered, gone, rejected, given up or superseded.
        case finish(DeliveryResult, detail: String?, goneSince: Date?)
        /// Another attempt at `dueAt`.
        case retry(dueAt: Date, error: String)
        /// Parked for a configuration fault: kept, not claimed, until the hub starts again.
        case suspend(reason: String)
        /// Not sent (the lane deferred it to keep its shares fair): back in the outbox unleased,
        /// due at `dueAt`; the claim's attempt is not counted, the last error is kept.
        case release(dueAt: Date)
    }

    public var id: Int64
    public var change: Change
    /// When the outcome was known.
    public var at: Date
    /// The provider's ID of the message (``ProviderReply/messageId``), kept in the receipt.
    public var providerMessageId: String?

    public init(id: Int64, _ change: Change, at: Date, providerMessageId: String? = nil) {
        self.id = id
        self.change = change
        self.at = at
        self.providerMessageId = providerMessageId
    }
}
