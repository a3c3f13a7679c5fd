import Crypto

/// The bearer tokens an ``IdentityVerifier`` verified recently, by the SHA-256 of app and token:
/// a device sends the same token with every request (each long-poll, each sync) until it expires,
/// and checking its signature and claims again cost a polling device's request more than the rest
/// of the request (13–16 % of the hub's CPU while 10,000 devices long-polled).
///
/// An entry holds the user the token named and the last moment the verifier would accept it
/// (`exp` plus the clock leeway): a token is never accepted from here after it would be refused
/// by a full check. The verifier forgets every entry whenever it loads or refetches keys, so a
/// key an issuer withdrew stops being trusted through its tokens at once. Memory is bounded: two
/// generations of ``limit`` entries (the token itself is not kept, only its digest).
struct VerifiedTokens: Sendable {
    /// The SHA-256 of the app ID, a NUL and the token: 32 bytes in the entry, no string.
    struct Key: Hashable, Sendable {
        let digest: SHA256Digest

        init(app: String, token: String) {
            var hash = SHA256()
            // Hashed in place: every device request computes one, so no copies of the strings.
            var app = app
            var token = token
            app.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            hash.update(data: [0])
            token.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            self.digest = hash.finalize()
        }
    }

    private struct Verified: Sendable {
        let user: String
        /// Seconds since 1970 after which the token is refused (its `exp` plus the leeway).
        let acceptedUntil: Double
    }

    /// Entries per generation.
    let limit: Int
    private var current: [Key: Verified] = [:]
    private var previous: [Key: Verified] = [:]

    init(limit: Int = 10_000) {
        self.limit = max(1, limit)
    }

    /// How many tokens are remembered (both generations).
    var count: Int { current.count + previous.count }

    /// The user of a token verified before and still accepted at `now` (seconds since 1970).
    /// A token found in the older generation moves to the current one.
    mutating func user(_ key: Key, at now: Double) -> String? {
        if let verified = current[key] {
            guard now < verified.acceptedUntil else {
                current[key] = nil
                return nil
            }
            return verified.user
        }
        guard let verified = previous.removeValue(forKey: key), now < verified.acceptedUntil else { return nil }
        keep(key, verified)
        return verified.user
    }

    /// Remembers a token verified for `user`, accepted until `acceptedUntil` (seconds since 1970).
    mutating func insert(_ key: Key, user: String, acceptedUntil: Double) {
        keep(key, Verified(user: user, acceptedUntil: acceptedUntil))
    }

    /// Forgets every token (keys were loaded or refetched).
    mutating func removeAll() {
        current = [:]
        previous = [:]
    }

    private mutating func keep(_ key: Key, _ verified: Verified) {
        if current.count >= limit {
            previous = current
            current = [:]
        }
        current[key] = verified
    }
}
