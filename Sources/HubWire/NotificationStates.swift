// The hub's small vocabularies as growing sets: structs with static members, so a value a newer
// hub sends (or a new case added here) never breaks decoding or a client's `switch`. One
// definition for the hub (HubCore) and its clients (HubClient); each encodes as its raw string.

/// Whether the user has read a notification.
public struct ReadState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unread = ReadState(rawValue: "unread")
    public static let read = ReadState(rawValue: "read")
    /// Every state this version knows.
    public static let known: [ReadState] = [.unread, .read]
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
    /// Every state this version knows.
    public static let known: [UserActionState] = [.noInteraction, .activated, .dismissed, .snoozed]
    public var description: String { rawValue }
}

/// The server-kept life-cycle state of a notification.
public struct NotificationStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = NotificationStatus(rawValue: "active")
    /// Past its `expirationDateTime`; the feed reports it (a tombstone) so devices remove the
    /// visual, until the retention period ends.
    public static let expired = NotificationStatus(rawValue: "expired")
    /// Deleted by the publisher; the feed reports it (a tombstone) so devices remove the visual,
    /// until the retention period ends.
    public static let deleted = NotificationStatus(rawValue: "deleted")
    /// Published with a `scheduledDateTime` still ahead: kept out of feeds and taps until then,
    /// when the sweep releases it (`active`, a feed change, its taps). Only the publisher sees it.
    public static let scheduled = NotificationStatus(rawValue: "scheduled")
    /// Every status this version knows.
    public static let known: [NotificationStatus] = [.active, .expired, .deleted, .scheduled]
    public var description: String { rawValue }
}

/// A notification's priority, as the publisher set it. High-priority taps are sent immediately and
/// may fall back to a visible alert.
public struct NotificationPriority: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = NotificationPriority(rawValue: "none")
    public static let low = NotificationPriority(rawValue: "low")
    public static let high = NotificationPriority(rawValue: "high")
    /// Every priority this version knows.
    public static let known: [NotificationPriority] = [.none, .low, .high]
    public var description: String { rawValue }

    /// Parses `High`, `high`, `HIGH`, … (Graph accepted any case); `nil` for an unknown priority.
    public init?(caseInsensitive text: String) {
        let lowered = text.lowercased()
        guard let match = Self.known.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
        self = match
    }
}

/// Whether an endpoint still receives shoulder taps.
public struct EndpointState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = EndpointState(rawValue: "active")
    /// A push provider said the token is dead (see the endpoint's `inactiveReason`); register
    /// again with a fresh token.
    public static let inactive = EndpointState(rawValue: "inactive")
    public var description: String { rawValue }
}
