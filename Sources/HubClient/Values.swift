// The hub's small vocabularies as growing sets: structs with static members, so a value a newer
// hub sends (or a new case added here) never breaks decoding or a client's `switch`.

/// Whether the user has read a notification.
public struct ReadState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unread = ReadState(rawValue: "unread")
    public static let read = ReadState(rawValue: "read")
    public var description: String { rawValue }
}

/// What the user did with a notification's visual on any of their devices.
///
/// Setting ``dismissed`` and saving is universal dismiss: the user's other devices sync the change
/// and remove the visual.
public struct UserActionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let noInteraction = UserActionState(rawValue: "noInteraction")
    public static let activated = UserActionState(rawValue: "activated")
    public static let dismissed = UserActionState(rawValue: "dismissed")
    public static let snoozed = UserActionState(rawValue: "snoozed")
    public var description: String { rawValue }
}

/// The server-kept life-cycle state of a notification.
public struct NotificationStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = NotificationStatus(rawValue: "active")
    /// Past its expiration; the feed reports it once so devices remove the visual.
    public static let expired = NotificationStatus(rawValue: "expired")
    /// Deleted by the publisher; the feed reports it once so devices remove the visual.
    public static let deleted = NotificationStatus(rawValue: "deleted")
    public var description: String { rawValue }
}

/// A notification's priority, as the publisher set it.
public struct NotificationPriority: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = NotificationPriority(rawValue: "none")
    public static let low = NotificationPriority(rawValue: "low")
    public static let high = NotificationPriority(rawValue: "high")
    public var description: String { rawValue }
}

/// A device platform of a cross-device app.
public struct Platform: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// iOS and iPadOS; app IDs are bundle IDs.
    public static let ios = Platform(rawValue: "ios")
    /// Android; app IDs are package names.
    public static let android = Platform(rawValue: "android")
    /// Windows; app IDs are package family names.
    public static let windows = Platform(rawValue: "windows")
    /// The web; app IDs are origins.
    public static let web = Platform(rawValue: "web")
    public var description: String { rawValue }
}

/// How the hub reaches an endpoint: a push provider, polling, or a custom transport's name.
public struct TransportID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Apple Push Notification service (iOS).
    public static let apns = TransportID(rawValue: "apns")
    /// Firebase Cloud Messaging (Android).
    public static let fcm = TransportID(rawValue: "fcm")
    /// Windows Push Notification Services.
    public static let wns = TransportID(rawValue: "wns")
    /// No push: the device long-polls the feed or reads it as server-sent events.
    public static let polling = TransportID(rawValue: "polling")
    public var description: String { rawValue }
}

/// The APNs environment a device token belongs to (the app's `aps-environment` entitlement).
public struct APNSEnvironment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Builds signed for development (Xcode runs): the sandbox gateway.
    public static let development = APNSEnvironment(rawValue: "development")
    /// TestFlight and App Store builds.
    public static let production = APNSEnvironment(rawValue: "production")
    public var description: String { rawValue }
}

/// Whether an endpoint still receives shoulder taps.
public struct EndpointState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = EndpointState(rawValue: "active")
    /// A push provider said the token is dead; register again with a fresh token.
    public static let inactive = EndpointState(rawValue: "inactive")
    public var description: String { rawValue }
}
