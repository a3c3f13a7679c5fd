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
///   update, state change, delete, expiry) takes the next value.
/// - A feed tap to an endpoint coalesces with that endpoint's pending, unleased tap (newest version,
///   higher priority, earlier due time). A tap put back by ``retryDelivery(id:dueAt:error:at:)``
///   while a newer unleased tap waits is finished as `superseded` instead.
/// - No fallback is enqueued for an endpoint that gets a visible delivery of the same publish.
/// - ``upsertEndpoint(_:)`` keeps the stored `lastSyncAt` when the incoming one is `nil`.
/// - An `endpointGone` result without a provider time compares the endpoint's `registeredAt` with
///   the delivery's claim time; `inactiveSince` is then the finish time.
/// - `UserNotification.deliveryMode` is the publisher's per-notification override, not the app default.
/// - State changes apply to tombstones too (a device may mark an expired notification read).
public protocol Store: Sendable {
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws

    // MARK: Notifications and feeds

    /// Upserts the notification `(app, user, appNotificationId)`, gives it a new change version and,
    /// in the same transaction, enqueues one delivery per matching active endpoint of the user
    /// (platform in the target policy). Taps to one endpoint coalesce with a pending tap.
    /// - Returns: the stored notification and whether it was created (`false`: updated).
    func publish(_ request: PublishRequest) async throws -> (notification: UserNotification, created: Bool)

    /// Marks a notification deleted (a tombstone in the feed) and taps the user's endpoints.
    /// - Returns: the tombstone, or `nil` if no such notification.
    func delete(_ key: FeedKey, appNotificationId: String, at now: Date) async throws -> UserNotification?

    /// Changes read / action state, bumps the change version, and taps the user's other endpoints
    /// (all active endpoints but `exceptEndpoint`). Returns `nil` if no such notification.
    func updateState(_ change: StateChange) async throws -> UserNotification?

    /// One notification by the hub's ID or the publisher's `appNotificationId`.
    func notification(_ key: FeedKey, id: String) async throws -> UserNotification?

    /// Notifications of a user, newest first.
    func history(_ key: FeedKey, filter: HistoryFilter) async throws -> [UserNotification]

    /// Changes after `version`, oldest first, at most `limit`.
    func feed(_ key: FeedKey, after version: Int64, limit: Int) async throws -> FeedPage

    /// Marks notifications whose expiration passed as expired (a feed change, with taps) and
    /// removes tombstones older than `purgeBefore`.
    /// - Returns: the feeds that changed.
    func sweep(now: Date, purgeBefore: Date) async throws -> Set<FeedKey>

    // MARK: Endpoints

    /// Registers or refreshes an endpoint. A refresh re-activates an inactive endpoint when its
    /// `registeredAt` is after the time it went inactive.
    func upsertEndpoint(_ endpoint: Endpoint) async throws -> Endpoint
    func endpoint(_ key: FeedKey, id: String) async throws -> Endpoint?
    /// The user's endpoints, ordered by ID. For all of an app's endpoints use ``endpoints(appId:state:)``.
    func endpoints(_ key: FeedKey) async throws -> [Endpoint]
    func endpoints(appId: String, state: EndpointState?) async throws -> [Endpoint]
    /// Removes an endpoint and its pending deliveries. Returns whether it existed.
    func deleteEndpoint(_ key: FeedKey, id: String) async throws -> Bool
    /// Records that the endpoint synced the feed (for fallback policies).
    func touchEndpoint(_ key: FeedKey, id: String, syncedAt: Date) async throws

    // MARK: Outbox

    /// Leases up to `limit` due deliveries to `owner` until `leaseUntil`. Expired leases of other
    /// owners are taken over.
    func claimDeliveries(limit: Int, now: Date, owner: String, leaseUntil: Date) async throws -> [ClaimedDelivery]
    /// Finishes a claimed delivery. `.endpointGone` also deactivates the endpoint (unless it
    /// re-registered after `goneSince`) and drops its other pending deliveries.
    func finishDelivery(
        id: Int64, result: DeliveryResult, detail: String?, goneSince: Date?, at now: Date
    ) async throws
    /// Puts a claimed delivery back for another attempt at `dueAt`.
    func retryDelivery(id: Int64, dueAt: Date, error: String, at now: Date) async throws
    /// Puts back the deliveries `owner` claimed and never finished (it crashed), so that an instance
    /// restarted under the same name sends them at once. Stores without this wait for the leases.
    func releaseLeases(owner: String) async throws
    /// The earliest due time of a pending delivery, to sleep until.
    func nextDueDate() async throws -> Date?
    func deliveryStatistics() async throws -> DeliveryStatistics
}

extension Store {
    public func releaseLeases(owner: String) async throws {}
}

/// A publish as the store takes it: validated, with IDs and times filled in.
public struct PublishRequest: Sendable {
    public var key: FeedKey
    public var draft: NotificationDraft
    /// Used if the notification is new.
    public var newId: String
    public var expirationDateTime: Date
    /// The delivery mode after the app default and the per-publish override.
    public var deliveryMode: DeliveryMode
    public var now: Date

    public init(
        key: FeedKey, draft: NotificationDraft, newId: String, expirationDateTime: Date, deliveryMode: DeliveryMode,
        now: Date
    ) {
        self.key = key
        self.draft = draft
        self.newId = newId
        self.expirationDateTime = expirationDateTime
        self.deliveryMode = deliveryMode
        self.now = now
    }
}

/// A device's change of a notification's state (universal dismiss).
public struct StateChange: Sendable {
    public var key: FeedKey
    /// The hub's ID or the `appNotificationId`.
    public var id: String
    public var readState: ReadState?
    public var userActionState: UserActionState?
    /// The endpoint that made the change; it is not tapped back.
    public var exceptEndpoint: String?
    public var now: Date

    public init(
        key: FeedKey, id: String, readState: ReadState?, userActionState: UserActionState?,
        exceptEndpoint: String?, now: Date
    ) {
        self.key = key
        self.id = id
        self.readState = readState
        self.userActionState = userActionState
        self.exceptEndpoint = exceptEndpoint
        self.now = now
    }
}
