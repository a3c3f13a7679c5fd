public import struct Foundation.Date

// VisualContent, NotificationPayload and TargetPolicy are HubWire's (shared with HubClient).

extension VisualContent {
    /// Every text besides the title and body: the localisation keys and their arguments.
    var localisationTexts: [String] {
        [titleLocKey, bodyLocKey].compactMap(\.self) + (titleLocArgs ?? []) + (bodyLocArgs ?? [])
    }
}

extension TargetPolicy {
    /// Whether some platforms are left out (an empty list targets every platform).
    var restrictsPlatforms: Bool { !platformTypes.isEmpty }
}

/// Graph's fallback policy: if an endpoint has not synced within `timeout` after a high-priority tap,
/// the hub sends a visible alert instead.
///
/// Graph's own shape, `endpointFallback {platformTypes, fallbackDelayInSeconds, visualContent}`, maps
/// onto it: the delay is ``timeoutSeconds``, the platforms ``platformTypes`` and the content
/// ``visualContent``.
public struct FallbackPolicy: Sendable, Hashable, Codable {
    /// Seconds, 60–600.
    public var timeoutSeconds: Int
    /// The platforms whose endpoints get a fallback alert; empty means every targeted platform.
    public var platformTypes: [Platform]
    /// What the alert shows; `nil` shows the notification's own `visualContent`.
    public var visualContent: VisualContent?

    public init(timeoutSeconds: Int, platformTypes: [Platform] = [], visualContent: VisualContent? = nil) {
        self.timeoutSeconds = timeoutSeconds
        self.platformTypes = platformTypes
        self.visualContent = visualContent
    }

    public static let allowedTimeout = 60...600

    /// Whether endpoints of `platform` get the fallback alert.
    public func includes(_ platform: Platform) -> Bool { platformTypes.isEmpty || platformTypes.contains(platform) }

    /// Whether the policy holds more than its timeout (what stores keep beside the timeout).
    public var hasDetails: Bool { !platformTypes.isEmpty || visualContent != nil }

    private enum CodingKeys: String, CodingKey { case timeoutSeconds, platformTypes, visualContent }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        timeoutSeconds = try container.decode(Int.self, forKey: .timeoutSeconds)
        platformTypes = try container.decodeIfPresent([Platform].self, forKey: .platformTypes) ?? []
        visualContent = try container.decodeIfPresent(VisualContent.self, forKey: .visualContent)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(timeoutSeconds, forKey: .timeoutSeconds)
        if !platformTypes.isEmpty { try container.encode(platformTypes, forKey: .platformTypes) }
        try container.encodeIfPresent(visualContent, forKey: .visualContent)
    }
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
    /// When to release it to devices; `nil` (or a time passed) sends at once.
    public var scheduledDateTime: Date?

    public init(
        appNotificationId: String,
        groupName: String? = nil,
        priority: NotificationPriority = .none,
        payload: NotificationPayload,
        targetPolicy: TargetPolicy = TargetPolicy(),
        displayTimeToLive: Int? = nil,
        expirationDateTime: Date? = nil,
        fallbackPolicy: FallbackPolicy? = nil,
        deliveryMode: DeliveryMode? = nil,
        scheduledDateTime: Date? = nil
    ) {
        self.scheduledDateTime = scheduledDateTime
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

/// A draft is stored as JSON with a broadcast (see ``BroadcastJSON``).
extension NotificationDraft: Codable {}

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
    /// When it was (or is) released to devices, if it was published scheduled.
    public var scheduledDateTime: Date?
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
        status: NotificationStatus = .active, changeVersion: Int64 = 0, scheduledDateTime: Date? = nil
    ) {
        self.scheduledDateTime = scheduledDateTime
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

extension PublishRequest {
    /// The notification this publish leaves, from the one stored under its `appNotificationId`
    /// (`nil`: none), and whether it counts as created. Every store takes it from here.
    ///
    /// - New: `id = newId`, created = last modified = `now`, unread, no interaction.
    /// - Stored and active or scheduled: content replaced, read/action state kept, last modified =
    ///   `now`; `created == false`.
    /// - Stored tombstone (expired or deleted): revived like a new one but keeping its `id`.
    ///
    /// The status is `scheduled` when the draft's `scheduledDateTime` is after `now` (its
    /// `deliveryMode` then is this publish's, the one it is released in), else `active`. The
    /// change version is the store's to set.
    public func outcome(existing: UserNotification?) -> (notification: UserNotification, created: Bool) {
        var notification: UserNotification
        let created: Bool
        if var current = existing, current.status == .active || current.status == .scheduled {
            current.lastModifiedDateTime = now
            notification = current
            created = false
        } else {
            notification = UserNotification(
                id: existing?.id ?? newId, appId: key.appId, userId: key.userId,
                appNotificationId: draft.appNotificationId, payload: draft.payload,
                expirationDateTime: expirationDateTime, createdDateTime: now, lastModifiedDateTime: now)
            created = true
        }
        notification.groupName = draft.groupName
        notification.priority = draft.priority
        notification.payload = draft.payload
        notification.targetPolicy = draft.targetPolicy
        notification.displayTimeToLive = draft.displayTimeToLive
        notification.expirationDateTime = expirationDateTime
        notification.fallbackPolicy = draft.fallbackPolicy
        notification.scheduledDateTime = draft.scheduledDateTime
        notification.status = (draft.scheduledDateTime.map { $0 > now } ?? false) ? .scheduled : .active
        // The release plans in the mode of this publish (the store does not know the app's default).
        notification.deliveryMode = notification.status == .scheduled ? deliveryMode : draft.deliveryMode
        return (notification, created)
    }
}
