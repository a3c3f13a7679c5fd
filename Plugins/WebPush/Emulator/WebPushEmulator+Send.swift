import Crypto
import Foundation
import HubEmulatorKit

extension WebPushEmulator {
    func route(_ request: EmulatorRequest) -> EmulatorResponse {
        guard request.path.hasPrefix("/push/") else { return refuse(404, "BadPath") }
        let id = String(request.path.dropFirst("/push/".count))
        let (subscription, expired) = state.withLock { ($0.subscriptions[id], $0.expired.contains(id)) }
        if distributor && request.method == "GET" { return check(known: subscription != nil && !expired) }
        guard request.method == "POST" else { return refuse(405, "MethodNotAllowed") }
        guard let subscription else { return refuse(404, "BadDeviceToken") }
        if expired { return refuse(410, "Unregistered") }
        let vapid: (subject: String, key: String, expiry: Date?)
        if distributor && request.header("authorization") == nil && subscription.applicationServerKey == nil {
            vapid = ("", "", nil)  // a distributor whose app gave no VAPID key takes pushes without it
        } else {
            switch verifyVAPID(request, subscription: subscription) {
            case .success(let verified): vapid = verified
            case .failure(let refusal): return refuse(refusal.status, refusal.reason)
            }
        }
        if let scripted = state.withLock({ $0.scripted.isEmpty ? nil : $0.scripted.removeFirst() }) {
            let reasons = [404: "BadDeviceToken", 410: "Unregistered", 413: "PayloadTooLarge", 429: "TooManyRequests"]
            return refuse(
                scripted.status,
                reasons[scripted.status] ?? (scripted.status >= 500 ? "InternalServerError" : "Scripted"),
                retryAfter: scripted.retryAfter)
        }
        guard let ttlText = request.header("ttl"), let ttl = Int(ttlText), (0...Self.maximumTTL).contains(ttl) else {
            return refuse(400, "BadTtl")
        }
        let urgency = request.header("urgency")
        if let urgency, !["very-low", "low", "normal", "high"].contains(urgency) { return refuse(400, "BadUrgency") }
        let topic = request.header("topic")
        if let topic, topic.isEmpty || topic.utf8.count > 32 || !Self.isBase64URLAlphabet(topic) {
            return refuse(400, "BadWebPushTopic")
        }
        guard request.body.count <= 4096 else { return refuse(413, "PayloadTooLarge") }
        guard request.header("content-encoding")?.lowercased() == "aes128gcm" else {
            return refuse(400, "BadWebPushRequest")
        }
        guard let plaintext = Self.decrypt(request.body, for: subscription) else {
            return refuse(400, "BadWebPushRequest")
        }
        var message = ReceivedMessage(
            subscriptionID: id, plaintext: plaintext, body: request.body, timeToLive: ttl, urgency: urgency,
            topic: topic, subject: vapid.subject, vapidKey: vapid.key, vapidExpiry: vapid.expiry,
            httpVersion: request.version)
        switch Self.readDeclarative(plaintext) {
        case .classic: break
        case .declarative: message.isDeclarative = true
        case .invalid(let problem): return refuse(400, "BadDeclarativeMessage: \(problem)")
        }
        let number = state.withLock { state in
            state.received.append(message)
            state.messageCount += 1
            return state.messageCount
        }
        return EmulatorResponse(
            status: 201, headers: [("Location", "\(origin)/messages/\(id)-\(number)"), ("TTL", String(ttl))])
    }

    /// The answer to a GET of an endpoint (distributor mode): the UnifiedPush endpoint check.
    private func check(known: Bool) -> EmulatorResponse {
        let answer = state.withLock { state in
            state.checks += 1
            return state.checkAnswer
        }
        guard known else { return .json(404, "{}") }
        switch answer {
        case .unifiedPush: return .json(200, #"{"unifiedpush":{"version":1}}"#)
        case .status(let status): return .json(status, "{}")
        case .body(let body): return .json(200, body)
        case .redirect(let location): return EmulatorResponse(status: 302, headers: [("Location", location)])
        }
    }

    private func refuse(_ status: Int, _ reason: String, retryAfter: Int? = nil) -> EmulatorResponse {
        state.withLock { $0.refusals.append((status, reason)) }
        return .json(
            status, #"{"reason":"\#(reason)"}"#, headers: retryAfter.map { [("Retry-After", String($0))] } ?? [])
    }

    struct Refusal: Error {
        var status: Int
        var reason: String
    }

    /// Checks `Authorization: vapid t=…, k=…` (RFC 8292 §3): the JWT's header, ES256 signature by `k`,
    /// `aud`, `exp` and `sub`, and `k` against the subscription's application server key.
    func verifyVAPID(
        _ request: EmulatorRequest, subscription: Subscription
    ) -> Result<(String, String, Date?), Refusal> {
        let bad = Refusal(status: 401, reason: "BadJwtToken")
        guard let header = request.header("authorization"), header.lowercased().hasPrefix("vapid ") else {
            return .failure(Refusal(status: 401, reason: "BadAuthorizationHeader"))
        }
        var parameters: [String: String] = [:]
        for part in header.dropFirst("vapid ".count).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { parameters[String(pair[0]).lowercased()] = String(pair[1]) }
        }
        guard let token = parameters["t"], let keyText = parameters["k"] else {
            return .failure(Refusal(status: 401, reason: "BadAuthorizationHeader"))
        }
        guard let keyBytes = Self.fromBase64URL(keyText),
            let key = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else { return .failure(Refusal(status: 401, reason: "BadVapidPublicKey")) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerJSON = Self.fromBase64URL(parts[0]),
            let claimsJSON = Self.fromBase64URL(parts[1]),
            let signatureBytes = Self.fromBase64URL(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)),
            let jose = try? JSONSerialization.jsonObject(with: Data(headerJSON)) as? [String: Any],
            jose["alg"] as? String == "ES256", (jose["typ"] as? String).map({ $0.uppercased() == "JWT" }) ?? true,
            let claims = try? JSONSerialization.jsonObject(with: Data(claimsJSON)) as? [String: Any]
        else { return .failure(bad) }
        guard claims["aud"] as? String == origin else { return .failure(bad) }
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue else { return .failure(bad) }
        let remaining = exp - now().timeIntervalSince1970
        guard remaining > 0, remaining <= 24 * 3600 else { return .failure(bad) }
        guard let subject = claims["sub"] as? String,
            subject.lowercased().hasPrefix("mailto:") || subject.lowercased().hasPrefix("https:")
        else { return .failure(bad) }
        if let expected = subscription.applicationServerKey, expected != keyBytes {
            return .failure(Refusal(status: 403, reason: "VapidPkHashMismatch"))
        }
        return .success((subject, keyText, Date(timeIntervalSince1970: exp)))
    }

    /// The plaintext of an `aes128gcm` body (RFC 8188, RFC 8291) for `subscription`, or `nil` when
    /// it does not decrypt to exactly one record ending in the delimiter 0x02.
    static func decrypt(_ body: [UInt8], for subscription: Subscription) -> [UInt8]? {
        guard body.count >= 21 else { return nil }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else { return nil }
        let senderPublic = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard record.count <= recordSize, recordSize >= 18,
            let sender = try? P256.KeyAgreement.PublicKey(x963Representation: senderPublic),
            let shared = try? subscription.privateKey.sharedSecretFromKeyAgreement(with: sender)
        else { return nil }
        let info = Array("WebPush: info".utf8) + [0] + subscription.p256dh + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: subscription.auth, sharedInfo: info, outputByteCount: 32)
        let cek = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce\0".utf8), outputByteCount: 12)
        guard let gcmNonce = try? AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }),
            let box = try? AES.GCM.SealedBox(
                nonce: gcmNonce, ciphertext: record.dropLast(16), tag: record.suffix(16)),
            let padded = try? AES.GCM.open(box, using: cek)
        else { return nil }
        // Strip the zero padding, then the last-record delimiter.
        guard let last = padded.lastIndex(where: { $0 != 0 }), padded[last] == 0x02 else { return nil }
        return Array(padded[padded.startIndex..<last])
    }

    static func isBase64URLAlphabet(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "_"
        }
    }
}
