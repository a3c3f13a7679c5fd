import Crypto
import Foundation

/// How urgent a message is to the user agent (RFC 8030 §5.3): a push service may hold back
/// low-urgency messages for a device on battery.
public struct WebPushUrgency: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static let veryLow = WebPushUrgency(rawValue: "very-low")
    public static let low = WebPushUrgency(rawValue: "low")
    public static let normal = WebPushUrgency(rawValue: "normal")
    public static let high = WebPushUrgency(rawValue: "high")
}

/// A replacement key for undelivered messages (RFC 8030 §5.4): at most 32 characters of the
/// URL-safe base64 alphabet. A newer message with the same topic replaces an older one still
/// waiting at the push service.
public struct WebPushTopic: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLength = 32
    public let value: String

    /// `value` as a topic, or `nil` when it is longer than 32 characters or outside the alphabet.
    public init?(_ value: String) {
        guard !value.isEmpty, value.utf8.count <= Self.maximumLength, Base64URL.isAlphabet(value) else { return nil }
        self.value = value
    }

    /// A topic for any key: the key itself when it is a valid topic, else the URL-safe base64 of
    /// its SHA-256 cut to 32 characters (stable, so republishing the same key still replaces).
    public init(deriving key: String) {
        if let topic = WebPushTopic(key) {
            self = topic
            return
        }
        self.value = String(Base64URL.encode(SHA256.hash(data: Array(key.utf8))).prefix(Self.maximumLength))
    }

    public var description: String { value }
}

/// One message for a subscription: the plaintext (encrypted at send) and the RFC 8030 headers.
public struct WebPushMessage: Sendable, Hashable {
    public var payload: [UInt8]
    /// The longest `TTL` the hub sends: 28 days, 2,419,200 s, the most FCM's push service (Chrome's)
    /// accepts; it refuses a larger value, and other push services cap theirs at or below it.
    public static let maximumTimeToLive = 2_419_200

    /// Seconds the push service keeps the message for an offline user agent (`TTL`, required),
    /// from 0 to ``maximumTimeToLive``.
    public var timeToLive: Int
    public var urgency: WebPushUrgency?
    public var topic: WebPushTopic?

    /// A message for a subscription.
    /// - Parameters:
    ///   - payload: the plaintext, encrypted at send.
    ///   - timeToLive: seconds the push service keeps it; below 0 counts as 0, above
    ///     ``maximumTimeToLive`` as ``maximumTimeToLive`` (a notification expiring in 30 days is
    ///     kept 28 days by the push service, then the hub's feed still has it).
    ///   - urgency: the `Urgency` header; `nil` sends none.
    ///   - topic: the `Topic` header (a newer message with the same topic replaces an undelivered one).
    public init(payload: [UInt8], timeToLive: Int, urgency: WebPushUrgency? = nil, topic: WebPushTopic? = nil) {
        self.payload = payload
        self.timeToLive = min(max(0, timeToLive), Self.maximumTimeToLive)
        self.urgency = urgency
        self.topic = topic
    }
}
