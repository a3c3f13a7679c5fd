import Crypto
import Foundation
import Synchronization

/// Signs VAPID tokens (RFC 8292) and keeps each for a while: push services (Apple's among them)
/// ask that a token not be replaced more than once an hour.
///
/// A token is `{"typ":"JWT","alg":"ES256"}` with claims `aud` (the push service's origin), `exp`
/// (``lifetime`` ahead, at most 24 hours) and `sub`; it is reused for the same key, subject and
/// origin until less than half its lifetime is left.
final class VAPIDSigner: Sendable {
    /// How far ahead `exp` is: 12 hours, as the web-push libraries do.
    let lifetime: TimeInterval
    private let now: @Sendable () -> Date
    private let cache = Mutex<[String: (token: String, expires: Date)]>([:])

    init(lifetime: TimeInterval = 12 * 3600, now: @escaping @Sendable () -> Date) {
        self.lifetime = min(lifetime, 24 * 3600)
        self.now = now
    }

    /// The `Authorization` header value: `vapid t=<JWT>, k=<public key>`.
    func authorization(_ credentials: VAPIDCredentials, audience: String) throws -> String {
        "vapid t=\(try token(credentials, audience: audience)), k=\(credentials.key.publicKeyBase64URL)"
    }

    /// A token for `audience`, from the cache while more than half its lifetime is left.
    func token(_ credentials: VAPIDCredentials, audience: String) throws -> String {
        let key = "\(credentials.key.publicKeyBase64URL)|\(credentials.subject)|\(audience)"
        let current = now()
        if let cached = cache.withLock({ $0[key] }), cached.expires.timeIntervalSince(current) > lifetime / 2 {
            return cached.token
        }
        let expires = current.addingTimeInterval(lifetime)
        let token = try Self.sign(credentials, audience: audience, expires: expires)
        cache.withLock { $0[key] = (token, expires) }
        return token
    }

    /// A fresh ES256 JWT.
    static func sign(_ credentials: VAPIDCredentials, audience: String, expires: Date) throws -> String {
        let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims = try JSONSerialization.data(
            withJSONObject: [
                "aud": audience, "exp": Int(expires.timeIntervalSince1970), "sub": credentials.subject,
            ] as [String: Any], options: [.sortedKeys, .withoutEscapingSlashes])
        let signingInput = header + "." + Base64URL.encode(claims)
        let signature = try credentials.key.privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
