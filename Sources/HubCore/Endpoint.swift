public import Foundation

/// One app install on one device for one user.
public struct Endpoint: Sendable, Hashable, Identifiable {
    /// Chosen by the device (stable across restarts); unique within (app, user).
    public var id: String
    public var appId: String
    public var userId: String
    public var platform: Platform
    /// The platform app ID (bundle ID, package name, …); one of the app's IDs for `platform`.
    public var platformAppId: String
    public var transport: TransportID
    /// The device's address for its transport (a push token, a channel URI); `nil` for transports
    /// that need none (``TransportCapabilities/tokenless``).
    public var token: String?
    /// What the transport needs besides the token, named by the transport (such as the APNs
    /// `environment`); checked by ``Transport/problem(registering:for:)``. Stores keep them.
    public var attributes: [String: String]
    public var appDisplayName: String?
    public var state: EndpointState
    public var inactiveReason: String?
    public var inactiveSince: Date?
    /// When the device last registered or refreshed this endpoint.
    public var registeredAt: Date
    public var lastSyncAt: Date?

    public init(
        id: String, appId: String, userId: String, platform: Platform, platformAppId: String,
        transport: TransportID, token: String? = nil, attributes: [String: String] = [:],
        appDisplayName: String? = nil, state: EndpointState = .active, inactiveReason: String? = nil,
        inactiveSince: Date? = nil, registeredAt: Date, lastSyncAt: Date? = nil
    ) {
        self.id = id
        self.appId = appId
        self.userId = userId
        self.platform = platform
        self.platformAppId = platformAppId
        self.transport = transport
        self.token = token
        self.attributes = attributes
        self.appDisplayName = appDisplayName
        self.state = state
        self.inactiveReason = inactiveReason
        self.inactiveSince = inactiveSince
        self.registeredAt = registeredAt
        self.lastSyncAt = lastSyncAt
    }
}

/// A user's feed, scoped to one app.
public struct FeedKey: Sendable, Hashable, CustomStringConvertible {
    public var appId: String
    public var userId: String
    public init(appId: String, userId: String) {
        self.appId = appId
        self.userId = userId
    }
    public var description: String { "\(appId)/\(userId)" }
}

/// One page of a feed: the notifications whose state changed after the requested version.
public struct FeedPage: Sendable, Hashable {
    /// Ordered by `changeVersion`, ascending; tombstones (expired, deleted) included.
    public var changes: [UserNotification]
    /// The version to pass next time: the last change's, or the requested one when empty.
    public var version: Int64
    public var hasMore: Bool
    public init(changes: [UserNotification], version: Int64, hasMore: Bool) {
        self.changes = changes
        self.version = version
        self.hasMore = hasMore
    }
}

/// Which notifications a history query returns; `nil` fields do not filter.
public struct HistoryFilter: Sendable, Hashable {
    public var readState: ReadState?
    public var userActionState: UserActionState?
    /// Defaults to active notifications only.
    public var status: NotificationStatus?
    public var limit: Int
    /// Only notifications whose `targetPolicy` includes this platform (a device's history).
    public var platform: Platform?
    /// The read time: an `active` notification whose expiration is at or before it counts as
    /// `expired` for ``status``. `nil` compares stored states only.
    public var asOf: Date?

    public init(
        readState: ReadState? = nil, userActionState: UserActionState? = nil,
        status: NotificationStatus? = .active, limit: Int = 100, platform: Platform? = nil, asOf: Date? = nil
    ) {
        self.readState = readState
        self.userActionState = userActionState
        self.status = status
        self.limit = limit
        self.platform = platform
        self.asOf = asOf
    }
}

extension Endpoint {
    /// The attributes as stores keep them, in the one text column that earlier versions used for
    /// the APNs environment: `nil` when there are none, the bare value when `environment` is the only
    /// one (as before), else a JSON object.
    package var attributesColumn: String? {
        if attributes.isEmpty { return nil }
        if attributes.count == 1, let value = attributes[Self.legacyAttribute], !value.hasPrefix("{") { return value }
        let sorted = attributes.sorted { $0.key < $1.key }
        let data = try? JSONSerialization.data(
            withJSONObject: Dictionary(uniqueKeysWithValues: sorted), options: .sortedKeys)
        return data.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Reads ``attributesColumn``.
    package static func attributes(column: String?) -> [String: String] {
        guard let column, !column.isEmpty else { return [:] }
        guard column.hasPrefix("{") else { return [legacyAttribute: column] }
        let object = try? JSONSerialization.jsonObject(with: Data(column.utf8)) as? [String: String]
        return object ?? [:]
    }

    /// The attribute earlier versions stored alone.
    static let legacyAttribute = "environment"
}
