public import HubCore

import struct Foundation.UUID

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
        self.apnsID = apnsID ?? UUID().uuidString.lowercased()
    }

    /// `apns-topic`: the bundle ID plus the suffix the push type needs.
    public var topic: String { payload.pushType.topic(forBundleID: bundleID) }

    /// The device token shortened for logs: its first 8 characters and its length.
    public var redactedToken: String { Self.redact(deviceToken) }

    static func redact(_ token: String) -> String { "\(token.prefix(8))…(\(token.count))" }

    /// Why `token` cannot be an APNs device token, or `nil`: tokens are non-empty hex text of whole
    /// bytes. Their length is not fixed (Apple: do not assume 32 bytes), so only a sanity cap applies.
    public static func deviceTokenProblem(_ token: String) -> String? {
        if token.isEmpty { return "the APNs device token is empty" }
        if token.utf8.count > 400 { return "an APNs device token is not \(token.utf8.count) characters long" }
        if token.utf8.count % 2 != 0 { return "an APNs device token is hex text of whole bytes (an even length)" }
        let isHex = token.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
        }
        return isHex ? nil : "an APNs device token is hex text (0-9, a-f); send the token's bytes hex-encoded"
    }
}
