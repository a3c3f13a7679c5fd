import Crypto
public import Foundation

/// Webhook signatures in the style of the Standard Webhooks specification, written once for the
/// sender (``WebhookTransport``) and for receivers (`hub emulate webhook`, tests).
///
/// Every request carries `webhook-id` (the event's ID, the same on every attempt),
/// `webhook-timestamp` (seconds since 1970 of this attempt) and `webhook-signature`: `v1,` and the
/// base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` under the secret's key. The secret is `whsec_`
/// and the base64 of 24 to 64 random bytes (the key). A receiver recomputes the HMAC over the raw
/// body, compares in constant time, and refuses timestamps more than five minutes away from its clock.
public enum WebhookSignature {
    /// What a secret starts with.
    public static let secretPrefix = "whsec_"
    /// How far a timestamp may be from the receiver's clock: five minutes, as the specification advises.
    public static let tolerance: TimeInterval = 300

    /// The signing key of `secret` (`whsec_<base64>`), or `nil` when it is not one.
    public static func key(fromSecret secret: String) -> [UInt8]? {
        guard secret.hasPrefix(secretPrefix),
            let data = Data(base64Encoded: String(secret.dropFirst(secretPrefix.count)))
        else { return nil }
        return (24...64).contains(data.count) ? Array(data) : nil
    }

    /// Why `secret` is not a webhook secret, or `nil`.
    public static func secretProblem(_ secret: String) -> String? {
        key(fromSecret: secret) == nil
            ? "must be whsec_ and the base64 of 24 to 64 random bytes (make one: echo whsec_$(openssl rand -base64 32))"
            : nil
    }

    /// A new secret of 32 random bytes.
    public static func makeSecret() -> String {
        secretPrefix + Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }

    /// The `webhook-signature` value of `body` sent as event `id` at `timestamp`: `v1,<base64>`.
    public static func sign(id: String, timestamp: Int, body: [UInt8], key: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return "v1," + Data(mac).base64EncodedString()
    }

    /// The three headers of a request carrying `body` as event `id`, sent at `now`.
    public static func headers(id: String, body: [UInt8], key: [UInt8], now: Date) -> [(String, String)] {
        let timestamp = Int(now.timeIntervalSince1970.rounded(.down))
        return [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", sign(id: id, timestamp: timestamp, body: body, key: key)),
        ]
    }

    /// Why a received request does not verify, or `nil` when it does: `signatures` is the
    /// `webhook-signature` header (space-separated `v1,…` entries; one must match).
    public static func problem(
        id: String?, timestamp: String?, signatures: String?, body: [UInt8], key: [UInt8], now: Date
    ) -> String? {
        guard let id, let timestamp, let signatures else {
            return "a webhook-id, webhook-timestamp or webhook-signature header is missing"
        }
        guard let seconds = Int(timestamp) else { return "webhook-timestamp is not whole seconds" }
        if abs(now.timeIntervalSince1970 - Double(seconds)) > tolerance {
            return "webhook-timestamp is more than five minutes from this clock"
        }
        let expected = Array(sign(id: id, timestamp: seconds, body: body, key: key).utf8)
        for candidate in signatures.split(separator: " ") {
            let given = Array(candidate.utf8)
            // Constant time over equal lengths.
            if given.count == expected.count, zip(given, expected).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 {
                return nil
            }
        }
        return "no v1 signature matches the body"
    }
}
