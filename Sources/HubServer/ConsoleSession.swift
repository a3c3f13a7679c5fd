import Crypto
import Foundation
import HubCore

/// Makes and checks the console's session cookies and the CSRF tokens bound to them.
///
/// A session is not stored anywhere: its cookie is `v1.<expiry>.<nonce>.<tag>`, the tag an
/// HMAC-SHA256 over the rest with a key derived (HKDF-SHA256) from the admin token. So:
/// - every instance behind a load balancer that has the same admin token accepts the cookie;
/// - changing the admin token ends every session at once;
/// - a cookie cannot be made or stretched without the admin token.
///
/// The CSRF token of a session is an HMAC of its cookie value under the same key, with its own
/// label: a form of one session does not pass in another, and it is never stored either.
/// Signing out clears the cookie in the browser; a copied cookie stays valid until it expires
/// (at most ``lifetime``) or the admin token changes.
struct ConsoleSessionCodec: Sendable {
    /// How long a session lasts after signing in.
    static let lifetime: TimeInterval = 12 * 3600
    /// The cookie's name.
    static let cookieName = "hub_console"

    private let key: SymmetricKey
    private static let version = "v1"

    /// The codec of `adminToken`; `nil` when there is none (the console is off).
    init?(adminToken: Secret?) {
        guard let adminToken, !adminToken.isEmpty else { return nil }
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: adminToken.revealBytes()),
            salt: Array("notificationhub console".utf8), info: Array("session v1".utf8), outputByteCount: 32)
    }

    /// A signed-in session.
    struct Session: Sendable, Hashable {
        /// The cookie value.
        var value: String
        var expires: Date
    }

    /// A new session that expires ``lifetime`` after `now`.
    func newSession(now: Date) -> Session {
        let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Self.lifetime).rounded(.down))
        let nonce = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let body = "\(Self.version).\(Int64(expires.timeIntervalSince1970)).\(nonce)"
        return Session(value: body + "." + Base64URL.encode(tag("session", body)), expires: expires)
    }

    /// The session a cookie value names, or `nil` when it is malformed, signed with another key
    /// (forged, or from before the admin token changed), or expired at `now`.
    func session(fromCookie value: String, now: Date) -> Session? {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.version, let seconds = Int64(parts[1]),
            let given = Base64URL.decode(String(parts[3]))
        else { return nil }
        let body = parts[0...2].joined(separator: ".")
        guard Self.constantTimeEqual(tag("session", body), given) else { return nil }
        let expires = Date(timeIntervalSince1970: TimeInterval(seconds))
        guard now < expires else { return nil }
        return Session(value: value, expires: expires)
    }

    /// The CSRF token of `session`'s forms.
    func csrfToken(for session: Session) -> String {
        Base64URL.encode(tag("csrf", session.value))
    }

    /// Whether `token` is the CSRF token of `session`, compared in constant time.
    func isCSRFToken(_ token: String, of session: Session) -> Bool {
        guard let given = Base64URL.decode(token) else { return false }
        return Self.constantTimeEqual(tag("csrf", session.value), given)
    }

    private func tag(_ label: String, _ text: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("\(label)|\(text)".utf8), using: key))
    }

    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
