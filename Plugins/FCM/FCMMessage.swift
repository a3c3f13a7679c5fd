/// An FCM HTTP v1 message (`projects.messages`), limited to what the hub sends.
///
/// The shape keeps wrong messages out: exactly one ``Target``, `data` values that can only be
/// strings, an Android TTL that is a duration, and a priority from a closed set of values.
///
/// ```swift
/// let tap = FCMMessage(
///     target: .token(deviceToken), data: ["hub": "tap", "v": "42"],
///     android: FCMAndroidConfig(priority: .high, timeToLive: .seconds(3600), collapseKey: "hub-tap"))
/// ```
public struct FCMMessage: Sendable, Hashable {
    /// Who receives the message: exactly one of these.
    public enum Target: Sendable, Hashable {
        /// One app instance's registration token.
        case token(String)
        /// A topic's bare name (no `/topics/` prefix).
        case topic(String)
        /// A boolean expression of topics, such as `'a' in topics && 'b' in topics`.
        case condition(String)
    }

    /// FCM counts `data` keys and values plus the notification's title and body against this many bytes.
    public static let payloadLimit = 4096

    public var target: Target
    /// Custom key-value pairs for the app; values are strings by construction.
    public var data: [String: String]
    /// A notification the system displays (visible deliveries).
    public var notification: FCMNotification?
    public var android: FCMAndroidConfig?

    public init(
        target: Target, data: [String: String] = [:], notification: FCMNotification? = nil,
        android: FCMAndroidConfig? = nil
    ) {
        self.target = target
        self.data = data
        self.notification = notification
        self.android = android
    }

    /// The bytes FCM counts against ``payloadLimit``: `data` keys and values, notification title and body.
    public var payloadSize: Int {
        data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            + (notification?.title?.utf8.count ?? 0) + (notification?.body?.utf8.count ?? 0)
    }

}

/// The cross-platform display notification of a message.
public struct FCMNotification: Sendable, Hashable {
    public var title: String?
    public var body: String?
    /// An HTTPS image URL.
    public var image: String?

    public init(title: String? = nil, body: String? = nil, image: String? = nil) {
        self.title = title
        self.body = body
        self.image = image
    }
}

/// Android delivery options (`AndroidConfig`).
public struct FCMAndroidConfig: Sendable, Hashable {
    /// The longest TTL FCM accepts: four weeks.
    public static let maximumTimeToLive = Duration.seconds(2_419_200)

    public var priority: FCMAndroidPriority?
    /// How long FCM keeps the message for an offline device; sent in whole seconds, clamped to 0…4 weeks.
    public var timeToLive: Duration?
    /// Messages with the same key replace each other while waiting (at most four keys per device).
    public var collapseKey: String?
    /// The package the registration token must belong to.
    public var restrictedPackageName: String?
    public var notification: FCMAndroidNotification?

    public init(
        priority: FCMAndroidPriority? = nil, timeToLive: Duration? = nil, collapseKey: String? = nil,
        restrictedPackageName: String? = nil, notification: FCMAndroidNotification? = nil
    ) {
        self.priority = priority
        self.timeToLive = timeToLive
        self.collapseKey = collapseKey
        self.restrictedPackageName = restrictedPackageName
        self.notification = notification
    }

    /// `ttl` as a protobuf Duration string, such as `"86400s"`.
    var ttlText: String? {
        timeToLive.map { ttl in
            let seconds = min(max(ttl.components.seconds, 0), Self.maximumTimeToLive.components.seconds)
            return "\(seconds)s"
        }
    }
}

/// Android message priority: `HIGH` wakes a dozing device, `NORMAL` may wait for a maintenance window.
public struct FCMAndroidPriority: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let normal = FCMAndroidPriority(rawValue: "NORMAL")
    public static let high = FCMAndroidPriority(rawValue: "HIGH")
}

/// Android-specific display options (`AndroidNotification`), limited to what the hub uses.
///
/// The localisation fields are where FCM HTTP v1 takes them (the cross-platform `notification` has
/// none): the app shows the string of `title_loc_key` / `body_loc_key` with the arguments filled
/// in, and the `notification` title and body when it has no such string.
public struct FCMAndroidNotification: Sendable, Hashable {
    /// A notification with the same tag replaces the one shown.
    public var tag: String?
    /// The Android notification channel.
    public var channelID: String?
    /// `title_loc_key`: a string resource of the app for the title.
    public var titleLocKey: String?
    /// `title_loc_args`: the values of ``titleLocKey``'s format specifiers.
    public var titleLocArgs: [String]
    /// `body_loc_key`: a string resource of the app for the body.
    public var bodyLocKey: String?
    /// `body_loc_args`: the values of ``bodyLocKey``'s format specifiers.
    public var bodyLocArgs: [String]
    /// `notification_count`: the count the launcher's badge shows for this notification.
    public var notificationCount: Int?

    public init(
        tag: String? = nil, channelID: String? = nil, titleLocKey: String? = nil, titleLocArgs: [String] = [],
        bodyLocKey: String? = nil, bodyLocArgs: [String] = [], notificationCount: Int? = nil
    ) {
        self.tag = tag
        self.channelID = channelID
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgs = bodyLocArgs
        self.notificationCount = notificationCount
    }
}
