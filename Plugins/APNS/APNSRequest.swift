import HubCore
import Synchronization

/// One notification for one device, with every header APNs reads (PROVIDERS.md §1.2).
///
/// The push type and priority come from ``payload``; the topic is ``bundleID`` plus the push
/// type's suffix. `APNSTransport` builds these from hub deliveries; embedders can send their own
/// with ``APNSTransport/send(_:credentials:)``.
public struct APNSRequest: Sendable, Hashable {
    /// The device token as hex text (`:path` is `/3/device/<token>`).
    public var deviceToken: String
    /// Which APNs server the token belongs to.
    public var environment: APNSEnvironment
    /// The app's bundle ID.
    public var bundleID: String
    public var payload: APNSPayload
    /// `nil` leaves APNs' default storage policy.
    public var expiration: APNSExpiration?
    public var collapseID: APNSCollapseID?
    /// The `apns-id`: a lowercase UUID, new for every request unless given to the initializer.
    public var apnsID: String

    public init(
        deviceToken: String, environment: APNSEnvironment, bundleID: String, payload: APNSPayload,
        expiration: APNSExpiration? = nil, collapseID: APNSCollapseID? = nil,
        apnsID: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.bundleID = bundleID
        self.payload = payload
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID ?? APNSRequestID.next()
    }

    /// `apns-topic`: the bundle ID plus the suffix the push type needs.
    public var topic: String { payload.pushType.topic(forBundleID: bundleID) }

    /// The device token shortened for logs: its first 8 characters and its length.
    public var redactedToken: String { Self.redact(deviceToken) }

    static func redact(_ token: String) -> String { "\(token.prefix(8))…(\(token.count))" }

    /// Why this request cannot go out as HTTP/2 header values, or `nil`: the device token must be
    /// hex text, and the topic, push type, `apns-id` and collapse ID valid field values. The
    /// transport writes headers without NIO's header-block validation (a tenth of a request's
    /// cost), so what an embedder passes in is checked here instead.
    public var headerProblem: String? {
        if let problem = Self.deviceTokenProblem(deviceToken) { return problem }
        if let problem = Self.fieldValueProblem("apns-topic", topic) { return problem }
        if let problem = Self.fieldValueProblem("apns-push-type", payload.pushType.rawValue) { return problem }
        if let problem = Self.fieldValueProblem("apns-id", apnsID) { return problem }
        if let collapseID, let problem = Self.fieldValueProblem("apns-collapse-id", collapseID.value) {
            return problem
        }
        return nil
    }

    /// Why `value` cannot be the value of header `name`, or `nil`: it must not be empty, hold control
    /// characters (RFC 9110 §5.5, stricter than HTTP/2's NUL, CR and LF), or start or end with
    /// whitespace (RFC 9113 §8.2.1).
    static func fieldValueProblem(_ name: String, _ value: String) -> String? {
        guard let first = value.utf8.first, let last = value.utf8.last else { return "\(name) is empty" }
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 {
            return "\(name) starts or ends with whitespace"
        }
        if !value.utf8.allSatisfy(isFieldByte) { return "\(name) holds a control character" }
        return nil
    }

    /// A byte HTTP allows in a field value: visible ASCII, space, tab, or part of a UTF-8 sequence.
    static func isFieldByte(_ byte: UInt8) -> Bool { byte >= 0x20 ? byte != 0x7F : byte == 0x09 }

    /// Why `token` cannot be an APNs device token, or `nil`: tokens are non-empty hex text of whole
    /// bytes. Their length is not fixed (Apple: do not assume 32 bytes), so only a sanity cap applies.
    public static func deviceTokenProblem(_ token: String) -> String? {
        if token.isEmpty { return "the APNs device token is empty" }
        if token.utf8.count > 400 { return "an APNs device token is not \(token.utf8.count) characters long" }
        if token.utf8.count % 2 != 0 { return "an APNs device token is hex text of whole bytes (an even length)" }
        let isHex = token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                UInt8(ascii: "A")...UInt8(ascii: "F"):
                true
            default: false
            }
        }
        return isHex ? nil : "an APNs device token is hex text (0-9, a-f); send the token's bytes hex-encoded"
    }
}

/// Makes `apns-id`s: lowercase version-4 UUIDs, unique within the process without a system call
/// each (`UUID()` opens `/dev/urandom` for every one, a tenth of a request's cost).
///
/// Of the 122 bits a random UUID has, the first 60 are drawn once per process and the last 62
/// count up from a random start, so no two IDs of a process are equal and two processes share a
/// prefix with odds of 2⁻⁶⁰. An `apns-id` identifies a notification in APNs' answers and logs;
/// it is not a secret.
enum APNSRequestID {
    private static let high: UInt64 = {
        var random = SystemRandomNumberGenerator()
        // Version 4 in bits 12–15.
        return (random.next() & ~0xF000) | 0x4000
    }()
    private static let counter: Atomic<UInt64> = {
        var random = SystemRandomNumberGenerator()
        return Atomic(random.next())
    }()

    static func next() -> String {
        let low = counter.wrappingAdd(1, ordering: .relaxed).newValue
        // The variant (`10`) takes the top two bits of the low half.
        return RandomID.uuidText(high: high, low: (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
    }
}
