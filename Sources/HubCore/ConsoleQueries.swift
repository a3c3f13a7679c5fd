public import struct Foundation.Date

/// The operator console's reads across an app: its notifications newest first, its failed
/// deliveries, its endpoints by search. Each is paged by a position (keyset), read through an
/// index, so a page costs the same with a million rows as with ten.
///
/// Separate from ``Store``: a store that does not implement it leaves the console's lists off
/// (they say so) and everything else working. `HubSQLite.SQLiteStore` and
/// `HubPostgres.PostgresStore` implement it; `HubTesting.StoreConformance` checks both.
public protocol ConsoleQueries: Sendable {
    /// Up to `limit` of the app's notifications matching `filter`, newest first (by
    /// `createdDateTime`, then hub ID, both descending), after `after` (the last one of the previous
    /// page; `nil`: from the newest).
    /// - Parameters:
    ///   - appId: the app.
    ///   - filter: which notifications.
    ///   - after: where the page starts.
    ///   - limit: the most notifications to read.
    func consoleNotifications(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) async throws -> [UserNotification]

    /// The app's deliveries that failed in `from..<to`, newest first, at most `limit`: finished
    /// `endpointGone`, `rejected` or `gaveUp` (at their finish time), and deliveries suspended for a
    /// configuration fault (at the time they were parked).
    /// - Parameters:
    ///   - appId: the app.
    ///   - from: the range's start.
    ///   - to: the range's end (exclusive).
    ///   - limit: the most deliveries to read.
    func consoleFailures(appId: String, from: Date, to: Date, limit: Int) async throws -> [ConsoleFailure]

    /// The failures of ``consoleFailures(appId:from:to:limit:)``, all of them, counted by transport,
    /// outcome and reason, the largest group first.
    /// - Parameters:
    ///   - appId: the app.
    ///   - from: the range's start.
    ///   - to: the range's end (exclusive).
    func consoleFailureGroups(appId: String, from: Date, to: Date) async throws -> [ConsoleFailureGroup]

    /// Up to `limit` of the app's endpoints in `state` whose user ID starts with `userPrefix` and
    /// whose ID starts with `endpointPrefix` (empty: any), after `after`, ordered by user, then ID
    /// (bytewise).
    /// - Parameters:
    ///   - appId: the app.
    ///   - state: only endpoints in this state.
    ///   - userPrefix: the start of the user IDs to list; empty lists every user.
    ///   - endpointPrefix: the start of the endpoint IDs to list; empty lists every endpoint.
    ///   - after: where the page starts (the last endpoint of the previous page); `nil`: the start.
    ///   - limit: the most endpoints to read.
    func consoleEndpoints(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) async throws -> [Endpoint]
}

/// Which notifications ``ConsoleQueries/consoleNotifications(appId:filter:after:limit:)`` lists.
public struct ConsoleNotificationFilter: Sendable, Hashable {
    /// Only this user's; `nil`: every user's.
    public var userId: String?
    /// Only those with this publisher ID; `nil`: any.
    public var appNotificationId: String?
    /// Only those in this stored status (`scheduled`, `active`, `expired`, `deleted`); `nil`: any.
    public var status: NotificationStatus?
    /// Only those created at or after this time.
    public var from: Date?
    /// Only those created before this time.
    public var to: Date?

    /// A filter; every part `nil` lists every notification.
    /// - Parameters:
    ///   - userId: only this user's.
    ///   - appNotificationId: only those with this publisher ID.
    ///   - status: only those in this status.
    ///   - from: only those created at or after this time.
    ///   - to: only those created before this time.
    public init(
        userId: String? = nil, appNotificationId: String? = nil, status: NotificationStatus? = nil, from: Date? = nil,
        to: Date? = nil
    ) {
        self.userId = userId
        self.appNotificationId = appNotificationId
        self.status = status
        self.from = from
        self.to = to
    }
}

/// A place in the newest-first list of an app's notifications: a notification's creation time
/// and hub ID.
public struct ConsoleNotificationPosition: Sendable, Hashable {
    public var createdDateTime: Date
    public var id: String

    /// The position of a notification created at `createdDateTime` with hub ID `id`.
    /// - Parameters:
    ///   - createdDateTime: its creation time, as the store returned it.
    ///   - id: its hub ID.
    public init(createdDateTime: Date, id: String) {
        self.createdDateTime = createdDateTime
        self.id = id
    }

    /// The position of `notification`.
    /// - Parameter notification: a notification the store returned.
    public init(_ notification: UserNotification) {
        self.init(createdDateTime: notification.createdDateTime, id: notification.id)
    }
}

/// How a delivery failed, in the console's words.
public struct ConsoleFailureOutcome: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The endpoint was gone (`endpointGone`); it is inactive now.
    public static let gone = ConsoleFailureOutcome(rawValue: "gone")
    /// The provider refused the request.
    public static let rejected = ConsoleFailureOutcome(rawValue: "rejected")
    /// Attempts or age ran out.
    public static let gaveUp = ConsoleFailureOutcome(rawValue: "gaveUp")
    /// Parked for a configuration fault until the hub restarts.
    public static let suspended = ConsoleFailureOutcome(rawValue: "suspended")

    /// The outcome of a finished delivery's result; `nil` for results that are not failures.
    /// - Parameter result: the stored result.
    public init?(_ result: DeliveryResult) {
        switch result {
        case .endpointGone: self = .gone
        case .rejected: self = .rejected
        case .gaveUp: self = .gaveUp
        default: return nil
        }
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One failed delivery.
public struct ConsoleFailure: Sendable, Hashable {
    public var userId: String
    public var endpointId: String
    /// The notification it carried; `nil` for a shoulder tap, which carries none.
    public var notificationId: String?
    public var transport: TransportID
    public var kind: DeliveryKind
    public var outcome: ConsoleFailureOutcome
    /// What the provider or the hub said; `nil` when nothing was.
    public var reason: String?
    /// When it finished, or was parked.
    public var at: Date

    /// A failed delivery.
    /// - Parameters:
    ///   - userId: the user.
    ///   - endpointId: the endpoint it went to.
    ///   - notificationId: the notification it carried.
    ///   - transport: the transport.
    ///   - kind: tap, visible or fallback.
    ///   - outcome: how it failed.
    ///   - reason: what the provider or the hub said.
    ///   - at: when it finished or was parked.
    public init(
        userId: String, endpointId: String, notificationId: String?, transport: TransportID, kind: DeliveryKind,
        outcome: ConsoleFailureOutcome, reason: String?, at: Date
    ) {
        self.userId = userId
        self.endpointId = endpointId
        self.notificationId = notificationId
        self.transport = transport
        self.kind = kind
        self.outcome = outcome
        self.reason = reason
        self.at = at
    }
}

/// Failed deliveries with the same transport, outcome and reason.
public struct ConsoleFailureGroup: Sendable, Hashable {
    public var transport: TransportID
    public var outcome: ConsoleFailureOutcome
    public var reason: String?
    public var count: Int
    /// The latest one's time.
    public var latest: Date

    /// A group of failures.
    /// - Parameters:
    ///   - transport: their transport.
    ///   - outcome: how they failed.
    ///   - reason: what was said.
    ///   - count: how many.
    ///   - latest: the latest one's time.
    public init(transport: TransportID, outcome: ConsoleFailureOutcome, reason: String?, count: Int, latest: Date) {
        self.transport = transport
        self.outcome = outcome
        self.reason = reason
        self.count = count
        self.latest = latest
    }
}
