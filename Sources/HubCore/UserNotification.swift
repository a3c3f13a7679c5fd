public import struct Foundation.Date

/// What the device shows: a title and a body, plus what each platform derives from them.
///
/// `title` and `body` are the text every platform can show; with localisation keys they are the
/// fallback text (Windows and Web Push always show them). A long body, then a long title, is cut to
/// fit each provider's limit by ``VisibleTextFit``.
public struct VisualContent: Sendable, Hashable, Codable {
    public var title: String
    public var body: String?
    /// A key of the app's localised strings for the title (APNs `title-loc-key`, FCM `title_loc_key`).
    public var titleLocKey: String?
    /// The values for the placeholders of ``titleLocKey``, in order.
    public var titleLocArgs: [String]?
    /// A key of the app's localised strings for the body (APNs `loc-key`, FCM `body_loc_key`).
    public var bodyLocKey: String?
    /// The values for the placeholders of ``bodyLocKey``, in order.
    public var bodyLocArgs: [String]?
    /// The app icon's badge count (APNs `badge`, FCM `notification_count`, a WNS badge); `0` clears it.
    public var badge: Int?
    /// `true`: Windows endpoints also get a live tile update with the title and body.
    public var tile: Bool?

    public init(
        title: String, body: String? = nil, titleLocKey: String? = nil, titleLocArgs: [String]? = nil,
        bodyLocKey: String? = nil, bodyLocArgs: [String]? = nil, badge: Int? = nil, tile: Bool? = nil
    ) {
        self.title = title
        self.body = body
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgs = bodyLocArgs
        self.badge = badge
        self.tile = tile
    }

    /// Every text besides the title and body: the localisation keys and their arguments.
    var localisationTexts: [String] {
        [titleLocKey, bodyLocKey].compactMap(\.self) + (titleLocArgs ?? []) + (bodyLocArgs ?? [])
    }
}

/// The content of a notification: an opaque string for the app, a visual, or both.
public struct NotificationPayload: Sendable, Hashable, Codable {
    public var rawContent: String?
    public var visualContent: VisualContent?
    public init(rawContent: String? = nil, visualContent: VisualContent? = nil) {
        self.rawContent = rawContent
        self.visualContent = visualContent
    }
}

/// Which of the user's platforms a notification targets; empty means all.
public struct TargetPolicy: Sendable, Hashable, Codable {
    public var platformTypes: [Platform]
    public init(platformTypes: [Platform] = []) { self.platformTypes = platformTypes }

    public func includes(_ platform: Platform) -> Bool { platformTypes.isEmpty || platformTypes.contains(platform) }
    /// Whether some platforms are left out (an empty list targets every platform).
    var restrictsPlatforms: Bool { !platformTypes.isEmpty }
}

/// Graph's fallback policy: if an endpoint has not synced within `timeout` after a high-priority tap,
/// the hub sends a visible alert instead.
public struct FallbackPolicy: Sendable, Hashable, Codable {
    /// Seconds, 60–600.
    public var timeoutSeconds: Int
    public init(timeoutSeconds: Int) { self.timeoutSeconds = timeoutSeconds }
    public static let allowedTimeout = 60...600
}

/// What an app server publishes for one user (Graph's notification body).
public struct NotificationDraft: Sendable, Hashable {
    public var appNotificationId: String
    public var groupName: String?
    public var priority: NotificationPriority
    public var payload: NotificationPayload
    public var targetPolicy: TargetPolicy
    /// Seconds the visual stays on screen; `nil` = platform default.
    public var displayTimeToLive: Int?
    /// `nil` = the hub's default lifetime.
    public var expirationDateTime: Date?
    public var fallbackPolicy: FallbackPolicy?
    /// Overrides the app's delivery mode for this notification.
    public var deliveryMode: DeliveryMode?

    public init(
        appNotificationId: String,
        groupName: String? = nil,
        priority: NotificationPriority = .none,
        payload: NotificationPayload,
        targetPolicy: TargetPolicy = TargetPolicy(),
        displayTimeToLive: Int? = nil,
        expirationDateTime: Date? = nil,
        fallbackPolicy: FallbackPolicy? = nil,
        deliveryMode: DeliveryMode? = nil
    ) {
        self.appNotificationId = appNotificationId
        self.groupName = groupName
        self.priority = priority
        self.payload = payload
        self.targetPolicy = targetPolicy
        self.displayTimeToLive = displayTimeToLive
        self.expirationDateTime = expirationDateTime
        self.fallbackPolicy = fallbackPolicy
        self.deliveryMode = deliveryMode
    }
}

/// A stored notification of one user of one app, with its server-kept state.
public struct UserNotification: Sendable, Hashable, Identifiable {
    /// The hub's ID, stable across republishes of the same `appNotificationId`.
    public var id: String
    public var appId: String
    public var userId: String
    public var appNotificationId: String
    public var groupName: String?
    public var priority: NotificationPriority
    public var payload: NotificationPayload
    public var targetPolicy: TargetPolicy
    public var displayTimeToLive: Int?
    public var expirationDateTime: Date
    public var fallbackPolicy: FallbackPolicy?
    public var deliveryMode: DeliveryMode?
    public var createdDateTime: Date
    public var lastModifiedDateTime: Date
    public var readState: ReadState
    public var userActionState: UserActionState
    public var status: NotificationStatus
    /// The feed position of this notification's latest change; grows with every change.
    public var changeVersion: Int64

    public init(
        id: String, appId: String, userId: String, appNotificationId: String, groupName: String? = nil,
        priority: NotificationPriority = .none, payload: NotificationPayload, targetPolicy: TargetPolicy = .init(),
        displayTimeToLive: Int? = nil, expirationDateTime: Date, fallbackPolicy: FallbackPolicy? = nil,
        deliveryMode: DeliveryMode? = nil, createdDateTime: Date, lastModifiedDateTime: Date,
        readState: ReadState = .unread, userActionState: UserActionState = .noInteraction,
        status: NotificationStatus = .active, changeVersion: Int64 = 0
    ) {
        self.id = id
        self.appId = appId
        self.userId = userId
        self.appNotificationId = appNotificationId
        self.groupName = groupName
        self.priority = priority
        self.payload = payload
        self.targetPolicy = targetPolicy
        self.displayTimeToLive = displayTimeToLive
        self.expirationDateTime = expirationDateTime
        self.fallbackPolicy = fallbackPolicy
        self.deliveryMode = deliveryMode
        self.createdDateTime = createdDateTime
        self.lastModifiedDateTime = lastModifiedDateTime
        self.readState = readState
        self.userActionState = userActionState
        self.status = status
        self.changeVersion = changeVersion
    }
}
