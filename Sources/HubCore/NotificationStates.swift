// ReadState, UserActionState, NotificationStatus, NotificationPriority and EndpointState are
// HubWire's (shared with HubClient). TransportID stays here: plugins each declare their own name
// on it (`.apns` in HubAPNS, …), while HubClient names the first-party ones itself.

/// The name of a transport plugin; each plugin adds its own as a static member (`.polling`, …).
public struct TransportID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}
