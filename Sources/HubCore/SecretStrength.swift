/// The least a secret of the hub must be, checked by `hub config check` and `hub serve` (HubConfig)
/// and again where a key is made from it (HubServer), so that a weak secret is refused with a
/// located diagnostic instead of being used.
///
/// - Bearer secrets (`server.adminToken`, `publishers[].key`): at least
///   ``minimumBearerCharacters`` characters, none of them white space or a control character
///   (a bearer token cannot carry them, and a token of spaces guesses as easily as an empty one).
/// - Keys (`server.cursorSecret`, HS256 `identity[].secret`): at least ``minimumKeyBytes`` bytes,
///   the size of the SHA-256 output (RFC 7518 §3.2 for HS256).
package enum SecretStrength {
    package static let minimumBearerCharacters = 16
    package static let minimumKeyBytes = 32

    /// What is wrong with a bearer secret (a phrase to follow its name), or `nil` when it is strong enough.
    package static func bearerProblem(_ secret: Secret) -> String? {
        let text = secret.reveal()
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            return "contains white space or control characters; a bearer token cannot carry them"
        }
        if text.count < minimumBearerCharacters {
            return "is shorter than \(minimumBearerCharacters) characters"
        }
        return nil
    }

    /// What is wrong with an HMAC key (a phrase to follow its name), or `nil` when it is long enough.
    package static func keyProblem(_ secret: Secret) -> String? {
        let count = secret.revealBytes().count
        guard count < minimumKeyBytes else { return nil }
        return "is \(count) bytes long; it must have at least \(minimumKeyBytes)"
    }
}
