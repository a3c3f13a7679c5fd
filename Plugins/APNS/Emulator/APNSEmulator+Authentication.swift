import Crypto

import struct Foundation.Data
import struct Foundation.Date

/// Who a request authenticated as.
struct APNSEmulatorAuthentication {
    /// The bundle IDs it may push to.
    var bundleIDs: Set<String>
    var isCertificate: Bool
    /// The first request with valid credentials on its connection (the stream limit rises after it).
    var firstValidRequest: Bool
}

extension APNSEmulator {
    /// A client certificate, or a provider token checked as the type's documentation lists (step 4).
    func authenticate(
        _ incoming: APNSEmulatorIncoming, on connection: APNSEmulatorConnection, now: Date
    ) throws(APNSEmulatorRejection) -> APNSEmulatorAuthentication {
        if !incoming.certificateBundleIDs.isEmpty {
            let first = connection.state.withLock { state in
                defer { state.raisedLimit = true }
                return !state.raisedLimit
            }
            return .init(bundleIDs: Set(incoming.certificateBundleIDs), isCertificate: true, firstValidRequest: first)
        }
        guard let header = incoming.first("authorization"), !header.isEmpty else {
            throw .init(403, "MissingProviderToken", "no authorization header and no client certificate")
        }
        guard Self.hasBearerPrefix(header) else {
            throw .init(403, "InvalidProviderToken", "authorization must be 'bearer <jwt>'")
        }
        let jwt = String(header.utf8.dropFirst(Self.bearer.count))!
        let verified: APNSEmulatorConnection.Verified
        if let cached = connection.state.withLock({ $0.verified[jwt] }) {
            verified = cached
        } else {
            verified = try verify(jwt)
            connection.state.withLock { state in
                if state.verified.count >= 8 { state.verified.removeAll() }
                state.verified[jwt] = verified
            }
        }
        let (keyEnvironment, bundles) = state.withLock {
            ($0.keys[verified.keyID]?.environment, $0.teamBundles[verified.teamID] ?? [])
        }
        if let keyEnvironment, keyEnvironment != configuration.environment {
            throw .init(403, "BadEnvironmentKeyIdInToken", "key \(verified.keyID) is for \(keyEnvironment)")
        }
        let age = now.timeIntervalSince(verified.issuedAt)
        if age > 3600 { throw .init(403, "ExpiredProviderToken", "iat is \(Int(age)) s old; the limit is 3600 s") }
        if age < -300 { throw .init(403, "InvalidProviderToken", "iat lies \(Int(-age)) s in the future") }
        let first = try connection.state.withLock { state throws(APNSEmulatorRejection) -> Bool in
            if let team = state.pinnedTeam, team != verified.teamID {
                throw .init(403, "InvalidProviderToken", "this connection serves team \(team)")
            }
            if let key = state.pinnedKey, key != verified.keyID {
                throw .init(403, "UnrelatedKeyIdInToken", "this connection was first used with key \(key)")
            }
            if state.currentToken != jwt {
                if state.currentToken != nil, let since = state.tokenSince, now.timeIntervalSince(since) < 1200 {
                    throw .init(
                        429, "TooManyProviderTokenUpdates",
                        "a new token \(Int(now.timeIntervalSince(since))) s after the last change on this connection")
                }
                state.currentToken = jwt
                state.tokenSince = now
            }
            state.pinnedTeam = verified.teamID
            state.pinnedKey = verified.keyID
            defer { state.raisedLimit = true }
            return !state.raisedLimit
        }
        return .init(bundleIDs: bundles, isCertificate: false, firstValidRequest: first)
    }

    private static let bearer = Array("bearer ".utf8)

    /// Whether `header` starts with `bearer ` in any case, without lowercasing the whole token.
    static func hasBearerPrefix(_ header: String) -> Bool {
        var bytes = header.utf8.makeIterator()
        for expected in bearer {
            guard let byte = bytes.next(), byte | (expected == 0x20 ? 0 : 0x20) == expected else { return false }
        }
        return true
    }

    /// Parses a compact ES256 JWT and verifies its signature with the registered key of its `kid`.
    private func verify(_ jwt: String) throws(APNSEmulatorRejection) -> APNSEmulatorConnection.Verified {
        func invalid(_ note: String) -> APNSEmulatorRejection { .init(403, "InvalidProviderToken", note) }
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URLDecode(parts[0]),
            let payloadBytes = Self.base64URLDecode(parts[1]), let signature = Self.base64URLDecode(parts[2]),
            let header = JSON.parse(headerBytes), let claims = JSON.parse(payloadBytes)
        else { throw invalid("not a compact JWT") }
        guard header["alg"]?.stringValue == "ES256" else { throw invalid("alg must be ES256") }
        guard let keyID = header["kid"]?.stringValue else { throw invalid("the header has no kid") }
        guard let teamID = claims["iss"]?.stringValue else { throw invalid("the claims have no iss") }
        guard let issuedAt = claims["iat"]?.integerValue ?? claims["iat"]?.stringValue.flatMap({ Int64($0) }) else {
            throw invalid("the claims have no numeric iat")
        }
        guard let key = state.withLock({ $0.keys[keyID] }) else { throw invalid("key \(keyID) is not registered") }
        guard key.teamID == teamID else { throw invalid("key \(keyID) does not belong to team \(teamID)") }
        guard let publicKey = try? P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            publicKey.isValidSignature(ecdsa, for: Array("\(parts[0]).\(parts[1])".utf8))
        else { throw invalid("the signature does not verify with key \(keyID)") }
        return .init(keyID: keyID, teamID: teamID, issuedAt: Date(timeIntervalSince1970: Double(issuedAt)))
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
