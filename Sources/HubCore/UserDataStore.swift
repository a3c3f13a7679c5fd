public import struct Foundation.Date

/// Everything a store holds about one user of one app: what an export returns and what an
/// erasure removes (issue 42: a person's data, exported and erased on request).
///
/// Both methods are one transaction each. ``eraseUser(_:at:)`` leaves no row naming the user in
/// any table: notifications (tombstones included), endpoints with their push tokens, tags, every
/// delivery (queued and finished: receipts name the user), and the user's place in broadcasts
/// (a `users` audience's list, a chunk being published, a broadcast's expansion cursor). What
/// remains is anonymous: the statistics buckets (per app, transport and minute, never per user)
/// and a broadcast's counts.
///
/// Every ``Store`` is one. A store written before this protocol inherits defaults that throw
/// ``HubError`` `unsupported`.
public protocol UserDataStore: Sendable {
    /// Everything held about the user, read in one transaction: every notification (any status)
    /// with who read or dismissed it, the endpoints (push tokens unmasked: the caller masks), the
    /// tags, every delivery of the outbox (pending and finished), and the broadcasts that list the user.
    /// - Parameter key: the app and the user.
    /// - Returns: an empty record when the store holds nothing about the user.
    func exportUser(_ key: FeedKey) async throws -> UserRecord

    /// Removes every row that names the user, in one transaction (see ``UserDataStore``).
    /// A broadcast's expansion cursor at the user moves to the user before it, so the broadcast
    /// reaches the same remaining users; a chunk being published loses the user.
    /// - Parameters:
    ///   - key: the app and the user.
    ///   - now: the time of the erasure (a broadcast it completes is done at `now`).
    /// - Returns: how many rows of each kind went (all zero when there was nothing).
    func eraseUser(_ key: FeedKey, at now: Date) async throws -> UserErasure
}

extension UserDataStore {
    public func exportUser(_ key: FeedKey) async throws -> UserRecord { throw HubError.userDataUnsupported }
    public func eraseUser(_ key: FeedKey, at now: Date) async throws -> UserErasure {
        throw HubError.userDataUnsupported
    }
}

extension HubError {
    /// What a store without export and erasure throws.
    static let userDataUnsupported = HubError(
        .unsupported,
        "This store cannot export or erase a user's data: use the SQLite or the PostgreSQL store, or implement "
            + "UserDataStore in yours.")
}

/// Everything a store holds about one user (``UserDataStore/exportUser(_:)``).
public struct UserRecord: Sendable, Hashable {
    /// Every notification of the user, any status, newest first (created, then change version),
    /// each with its published version and who read or dismissed it. Their ``NotificationTrace/deliveries``
    /// are empty as the store reads them: ``traces`` fills them from ``deliveries``.
    public var notifications: [NotificationTrace]
    /// The user's endpoints, active and inactive, ordered by ID.
    public var endpoints: [Endpoint]
    /// The user's tags, in byte order.
    public var tags: [String]
    /// Every outbox row of the user, pending and finished, in outbox order (by ID).
    public var deliveries: [DeliveryTrace]
    /// The IDs of the app's broadcasts whose `users` audience lists the user, oldest first.
    public var broadcasts: [String]

    /// - Parameters:
    ///   - notifications: every notification, newest first, with empty deliveries.
    ///   - endpoints: the endpoints, by ID.
    ///   - tags: the tags, in byte order.
    ///   - deliveries: every outbox row of the user, by ID.
    ///   - broadcasts: the IDs of broadcasts whose user list names the user.
    public init(
        notifications: [NotificationTrace] = [], endpoints: [Endpoint] = [], tags: [String] = [],
        deliveries: [DeliveryTrace] = [], broadcasts: [String] = []
    ) {
        self.notifications = notifications
        self.endpoints = endpoints
        self.tags = tags
        self.deliveries = deliveries
        self.broadcasts = broadcasts
    }

    /// Whether the store holds nothing about the user.
    public var isEmpty: Bool {
        notifications.isEmpty && endpoints.isEmpty && tags.isEmpty && deliveries.isEmpty && broadcasts.isEmpty
    }

    /// The notifications, each with the user's deliveries: ``DeliveryReceipt/receipts(_:endpoints:wakesInProcess:)``
    /// picks those that concern it, as it does for `GET …/deliveries`.
    public var traces: [NotificationTrace] {
        notifications.map { trace in
            var trace = trace
            trace.deliveries = deliveries
            return trace
        }
    }
}

/// How many rows an erasure removed, by kind (``UserDataStore/eraseUser(_:at:)``): what the audit
/// log and the API answer say, never what the rows held.
public struct UserErasure: Sendable, Hashable, Codable {
    public var notifications: Int
    public var endpoints: Int
    public var tags: Int
    /// Outbox rows, pending and finished.
    public var deliveries: Int
    /// Broadcasts whose user list, chunk or cursor named the user.
    public var broadcasts: Int

    /// - Parameters:
    ///   - notifications: notifications removed (tombstones included).
    ///   - endpoints: endpoints removed.
    ///   - tags: tags removed.
    ///   - deliveries: outbox rows removed.
    ///   - broadcasts: broadcasts that no longer name the user.
    public init(notifications: Int = 0, endpoints: Int = 0, tags: Int = 0, deliveries: Int = 0, broadcasts: Int = 0) {
        self.notifications = notifications
        self.endpoints = endpoints
        self.tags = tags
        self.deliveries = deliveries
        self.broadcasts = broadcasts
    }

    /// Whether nothing was held about the user.
    public var isEmpty: Bool { self == UserErasure() }
}
