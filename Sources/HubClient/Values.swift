@_exported public import HubWire

// The wire vocabulary is HubWire's: the very types the hub encodes (HubCore names them too), so
// the two sides cannot drift apart. HubWire is re-exported, and each type is also named here by a
// typealias: DocC does not document a re-exported module's types, and apps' code reads the same
// as before.

/// Whether the user has read a notification (unread, read).
public typealias ReadState = HubWire.ReadState
/// What the user did with a notification's visual on any of their devices (noInteraction,
/// activated, dismissed, snoozed). Setting `dismissed` and saving is universal dismiss.
public typealias UserActionState = HubWire.UserActionState
/// The server-kept life-cycle state of a notification: active, or expired / deleted for the
/// tombstones the feed reports once.
public typealias NotificationStatus = HubWire.NotificationStatus
/// A notification's priority, as the publisher set it (none, low, high).
public typealias NotificationPriority = HubWire.NotificationPriority
/// A device platform of a cross-device app (ios, android, windows, web).
public typealias Platform = HubWire.Platform
/// Whether an endpoint still receives shoulder taps (active, inactive).
public typealias EndpointState = HubWire.EndpointState
/// What the notification shows: a title and an optional body, with the localisation keys, badge
/// count and tile flag the publisher gave (the app can render them itself after a sync).
public typealias VisualContent = HubWire.VisualContent

// The two that stay the client's own, as growing sets like the rest. On the hub a transport's
// name is declared by its plugin (`TransportID.apns` in HubAPNS, a third party's in its own
// package) and the APNs environment is the APNs plugin's type; the client names the first-party
// values for app developers. One shared type would have every name declared twice, ambiguous
// wherever both sides are imported.

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
    /// UnifiedPush (any platform): the token is the distributor's endpoint with its Web Push keys,
    /// `{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}`; the hub checks the
    /// endpoint at its distributor when it registers.
    public static let unifiedpush = TransportID(rawValue: "unifiedpush")
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
