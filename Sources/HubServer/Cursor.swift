import Crypto
import Foundation
import HubCore

/// Makes and checks the opaque, tamper-evident tokens the API hands out: feed cursors and Graph
/// subscription IDs (`X-UNS-ID`).
///
/// Both are base64url (no padding) and end in an HMAC-SHA256 tag keyed by
/// ``HubServerConfiguration/cursorKey``; each kind uses its own label in the MAC input, so one can
/// never pass for the other.
///
/// - A **cursor** is `version (1) ‖ feed version (8, big endian) ‖ tag (32)`. The tag covers the
///   app and the user too, so a cursor only verifies for the feed it came from and reveals nothing
///   but its position.
/// - A **subscription ID** is `version (1) ‖ expiry (8, Unix seconds) ‖ app length (2) ‖ app ‖
///   user ‖ tag (32)`: it must name its app and user, because `POST /beta/me/notifications` has
///   no other way to know them.
struct TokenCodec: Sendable {
    private let key: SymmetricKey
    private static let version: UInt8 = 1
    private static let tagLength = 32

    init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    // MARK: Feed cursors

    /// The cursor of position `version` in the feed of `user` of `app`.
    func cursor(version: Int64, app: String, user: String) -> String {
        var bytes: [UInt8] = [Self.version]
        bytes.append(contentsOf: Self.bigEndian(UInt64(bitPattern: version)))
        bytes.append(contentsOf: tag(label: "cursor", fields: [app, user], body: bytes))
        return Base64URL.encode(bytes)
    }

    /// The feed position a cursor names, or `nil` when it is malformed, tampered with, or belongs
    /// to another feed.
    func version(fromCursor cursor: String, app: String, user: String) -> Int64? {
        guard let bytes = Base64URL.decode(cursor), bytes.count == 1 + 8 + Self.tagLength,
            bytes[0] == Self.version
        else { return nil }
        let body = Array(bytes[0..<9])
        guard Self.constantTimeEqual(tag(label: "cursor", fields: [app, user], body: body), Array(bytes[9...]))
        else { return nil }
        let version = Int64(bitPattern: Self.readBigEndian(body[1..<9]))
        return version >= 0 ? version : nil
    }

    // MARK: Graph subscription IDs

    /// What a subscription ID names.
    struct Subscription: Sendable, Hashable {
        var app: String
        var user: String
        var expiration: Date
    }

    /// Why a subscription ID was refused.
    enum SubscriptionError: Error, Sendable {
        case malformed
        case expired(Date)
    }

    func subscriptionID(_ subscription: Subscription) -> String {
        let app = Array(subscription.app.utf8)
        var bytes: [UInt8] = [Self.version]
        let expiry = Int64(subscription.expiration.timeIntervalSince1970.rounded(.down))
        bytes.append(contentsOf: Self.bigEndian(UInt64(bitPattern: expiry)))
        bytes.append(UInt8(truncatingIfNeeded: app.count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: app.count))
        bytes.append(contentsOf: app)
        bytes.append(contentsOf: subscription.user.utf8)
        bytes.append(contentsOf: tag(label: "subscription", fields: [], body: bytes))
        return Base64URL.encode(bytes)
    }

    /// The app, user and expiry of a subscription ID.
    /// - Throws: ``SubscriptionError`` when it is malformed, tampered with or expired at `now`.
    func subscription(fromID id: String, now: Date) throws(SubscriptionError) -> Subscription {
        guard id.utf8.count <= 4096, let bytes = Base64URL.decode(id), bytes.count > 11 + Self.tagLength,
            bytes[0] == Self.version
        else { throw .malformed }
        let body = Array(bytes[..<(bytes.count - Self.tagLength)])
        guard Self.constantTimeEqual(tag(label: "subscription", fields: [], body: body), Array(bytes[body.count...]))
        else { throw .malformed }
        let expiry = Int64(bitPattern: Self.readBigEndian(body[1..<9]))
        let appLength = Int(body[9]) << 8 | Int(body[10])
        guard body.count >= 11 + appLength,
            let app = String(validating: body[11..<(11 + appLength)], as: UTF8.self),
            let user = String(validating: body[(11 + appLength)...], as: UTF8.self)
        else { throw .malformed }
        let expiration = Date(timeIntervalSince1970: TimeInterval(expiry))
        guard expiration > now else { throw .expired(expiration) }
        return Subscription(app: app, user: user, expiration: expiration)
    }

    // MARK: Helpers

    /// HMAC-SHA256 over a label, length-prefixed fields and the token body.
    private func tag(label: String, fields: [String], body: [UInt8]) -> [UInt8] {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("notificationhub/\(label)\0".utf8))
        for field in fields {
            let bytes = Array(field.utf8)
            mac.update(data: Self.bigEndian(UInt64(bytes.count)))
            mac.update(data: bytes)
        }
        mac.update(data: body)
        return Array(mac.finalize())
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    private static func readBigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Base64url without padding (RFC 4648 §5).
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0.isBase64URL }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}

extension UInt8 {
    fileprivate var isBase64URL: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-")
            || self == UInt8(ascii: "_")
    }
}
