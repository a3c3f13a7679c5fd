import Crypto
public import Foundation
public import HubTransportKit

/// Signs webhook posts, and checks them on the receiving side.
///
/// The signature is HMAC-SHA256, keyed by the shared secret, over `"<timestamp>.<body>"`, sent
/// as `X-Hub-Signature-256: sha256=<hex>` with the Unix time in `X-Hub-Timestamp`. Binding the
/// time stops a recorded post from being replayed later; a receiver should refuse timestamps more
/// than a few minutes away from its clock.
///
/// ```swift
/// // In the receiver (any HTTP server):
/// guard WebhookSignature.isValid(signature: request.headers["X-Hub-Signature-256"],
///                                timestamp: request.headers["X-Hub-Timestamp"],
///                                body: body, secret: secret) else { return 401 }
/// ```
public enum WebhookSignature {
    public static let signatureHeader = "X-Hub-Signature-256"
    public static let timestampHeader = "X-Hub-Timestamp"
    /// How far a timestamp may be from the receiver's clock.
    public static let tolerance: TimeInterval = 300

    /// The `X-Hub-Signature-256` value of `body` sent at `timestamp`.
    public static func sign(body: Data, timestamp: Int, secret: Secret) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: secret.revealBytes()))
        mac.update(data: Data("\(timestamp).".utf8))
        mac.update(data: body)
        return "sha256="
            + mac.finalize().map { byte in
                let digits = String(byte, radix: 16)
                return byte < 16 ? "0" + digits : digits
            }.joined()
    }

    /// Whether a post carries a valid signature of `body` with a timestamp within ``tolerance`` of
    /// `now`. Compares in constant time.
    public static func isValid(
        signature: String?, timestamp: String?, body: Data, secret: Secret, now: Date = Date()
    ) -> Bool {
        guard let signature, let timestamp, let seconds = Int(timestamp),
            abs(now.timeIntervalSince1970 - TimeInterval(seconds)) <= tolerance
        else { return false }
        let expected = Array(sign(body: body, timestamp: seconds, secret: secret).utf8)
        let given = Array(signature.utf8)
        guard expected.count == given.count else { return false }
        return zip(expected, given).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
