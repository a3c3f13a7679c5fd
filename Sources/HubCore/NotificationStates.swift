/// Whether the user has read a notification.
public struct ReadState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unread = ReadState(rawValue: "unread")
    public static let read = ReadState(rawValue: "read")
    public static let known: [ReadState] = [.unread, .read]
    public var description: String { rawValue }
}

/// What the user did with a notification's visual on any device.
public struct UserActionState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let noInteraction = UserActionState(rawValue: "noInteraction")
    public static let activated = UserActionState(rawValue: "activated")
    public static let dismissed = UserActionState(rawValue: "dismissed")
    public static let snoozed = UserActionState(rawValue: "snoozed")
    public static let known: [UserActionState] = [.noInteraction, .activated, .dismissed, .snoozed]
    public var description: String { rawValue }
}

/// The server-kept life-cycle state of a notification.
public struct NotificationStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = NotificationStatus(rawValue: "active")
    /// Past its `expirationDateTime`; stays in the feed as a tombstone until the retention period ends.
    public static let expired = NotificationStatus(rawValue: "expired")
    /// Deleted by the publisher; stays in the feed as a tombstone until the retention period ends.
    public static let deleted = NotificationStatus(rawValue: "deleted")
    /// Published with a `scheduledDateTime` still ahead: kept out of feeds and taps until then,
    /// when the sweep releases it (`active`, a feed change, its taps). The publisher sees it.
    public static let scheduled = NotificationStatus(rawValue: "scheduled")
    public static let known: [NotificationStatus] = [.active, .expired, .deleted, .scheduled]
    public var description: String { rawValue }
}

/// A notification's priority. High-priority taps are sent immediately and may fall back to a visible alert.
public struct NotificationPriority: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = NotificationPriority(rawValue: "none")
    public static let low = NotificationPriority(rawValue: "low")
    public static let high = NotificationPriority(rawValue: "high")
    public static let known: [NotificationPriority] = [.none, .low, .high]
    public var description: String { rawValue }

    /// Parses `High`, `high`, `HIGH`, … (Graph accepted any case).
    public init?(caseInsensitive text: String) {
        guard let match = Self.known.first(where: { $0.rawValue.caseInsensitiveCompare(text) == .orderedSame })
        else { return nil }
        self = match
    }
}

/// The name of a transport plugin; each plugin adds its own as a static member (`.polling`, …).
public struct TransportID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// Whether an endpoint still receives taps.
public struct EndpointState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let active = EndpointState(rawValue: "active")
    /// The provider said the token is dead; see the endpoint's `inactiveReason`.
    public static let inactive = EndpointState(rawValue: "inactive")
    public var description: String { rawValue }
}

extension String {
    func caseInsensitiveCompare(_ other: String) -> ComparisonResultLite {
        lowercased() == other.lowercased() ? .orderedSame : .orderedDifferent
    }
}

enum ComparisonResultLite { case orderedSame, orderedDifferent }
