public import Crypto
import Foundation
public import HubCore

/// An application server's VAPID key pair (RFC 8292): a P-256 key whose public half is the
/// `applicationServerKey` a page passes to `pushManager.subscribe`.
///
/// The private key is never printed: `description` shows only the public key.
public struct VAPIDKey: Sendable, Hashable, CustomStringConvertible {
    let privateKey: P256.Signing.PrivateKey

    public init(_ privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// A new random key pair (what `hub map-app` writes for an app's web platform).
    public static func generate() -> VAPIDKey { VAPIDKey(P256.Signing.PrivateKey()) }

    /// Reads a private key: a PEM (`EC PRIVATE KEY` or PKCS #8 `PRIVATE KEY`, as
    /// `openssl ecparam -genkey -name prime256v1` writes) or the URL-safe base64 of the 32-byte
    /// scalar (the `privateKey` of `web-push generate-vapid-keys`).
    /// - Throws: ``WebPushError`` (``WebPushErrorCode/vapidUnavailable``) saying what the text is not.
    public init(privateKey text: String) throws(WebPushError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN") {
            do {
                self.init(try P256.Signing.PrivateKey(pemRepresentation: trimmed))
            } catch {
                throw WebPushError(
                    code: .vapidUnavailable, message: "the VAPID private key PEM is not a P-256 (prime256v1) key",
                    underlying: error)
            }
            return
        }
        guard let raw = Base64URL.decode(trimmed), raw.count == 32 else {
            throw WebPushError(
                code: .vapidUnavailable,
                message: "the VAPID private key must be a PEM or the URL-safe base64 of a 32-byte P-256 scalar")
        }
        do {
            self.init(try P256.Signing.PrivateKey(rawRepresentation: raw))
        } catch {
            throw WebPushError(
                code: .vapidUnavailable, message: "the VAPID private key is not a P-256 scalar", underlying: error)
        }
    }

    /// The uncompressed public key (65 bytes).
    public var publicKey: [UInt8] { Array(privateKey.publicKey.x963Representation) }

    /// The public key in URL-safe base64: the `applicationServerKey` and the `k` of the `Authorization` header.
    public var publicKeyBase64URL: String { Base64URL.encode(publicKey) }

    /// The private key as a PKCS #8 PEM, to write to a private file. Never log it.
    public var pemRepresentation: Secret { Secret(privateKey.pemRepresentation, source: "generated") }

    public var description: String { "VAPID key \(publicKeyBase64URL)" }

    /// Keys are equal when their public halves are (a private key has one public key).
    public static func == (lhs: VAPIDKey, rhs: VAPIDKey) -> Bool { lhs.publicKey == rhs.publicKey }

    public func hash(into hasher: inout Hasher) { hasher.combine(publicKey) }
}

/// One app's VAPID identity: its key and the contact (`sub`) push services may use to reach the operator.
public struct VAPIDCredentials: Sendable, Hashable, CustomStringConvertible {
    public var key: VAPIDKey
    /// A `mailto:` or `https:` URL.
    public var subject: String

    /// - Throws: ``WebPushError`` when `subject` is not a `mailto:` or `https:` URL.
    public init(key: VAPIDKey, subject: String) throws(WebPushError) {
        if let problem = Self.subjectProblem(subject) {
            throw WebPushError(code: .vapidUnavailable, message: "the VAPID subject \(problem)")
        }
        self.key = key
        self.subject = subject
    }

    /// Reads credentials from hub.yaml values: the private key secret (PEM or base64url) and the subject.
    public init(privateKey: Secret, subject: String) throws(WebPushError) {
        try self.init(key: VAPIDKey(privateKey: privateKey.reveal()), subject: subject)
    }

    /// Why `subject` is not a usable VAPID `sub` (RFC 8292 §2.1), or `nil`.
    public static func subjectProblem(_ subject: String) -> String? {
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:") {
            let address = subject.dropFirst("mailto:".count)
            return address.contains("@") && !address.contains(where: \.isWhitespace)
                ? nil : "must be mailto: followed by an e-mail address"
        }
        if lower.hasPrefix("https://"), let url = URLComponents(string: subject), url.host?.isEmpty == false {
            return nil
        }
        return "must be a mailto: or https: URL (it is '\(subject.prefix(64))')"
    }

    public var description: String { "\(key) for \(subject)" }
}
