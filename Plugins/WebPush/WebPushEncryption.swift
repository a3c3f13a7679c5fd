public import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291) with the `aes128gcm` content coding (RFC 8188).
///
/// Every message gets a fresh ephemeral P-256 key pair and a 16-byte random salt. The body is the
/// RFC 8188 header (salt, record size, the 65-byte sender public key) followed by exactly one
/// AES-128-GCM record holding the plaintext, the last-record delimiter `0x02` and no padding.
///
/// ```swift
/// let body = try WebPushEncryption.encrypt(Array("{}".utf8), for: subscription)
/// ```
public enum WebPushEncryption {
    /// The body size every push service must accept (RFC 8030 §7.2).
    public static let maximumBodySize = 4096
    /// Salt (16), record size (4), key ID length (1) and the uncompressed sender key (65).
    public static let headerSize = 86
    /// The AES-GCM tag after the record.
    public static let tagSize = 16
    /// The largest plaintext that fits in a 4,096-byte body: 4096 − 86 − 1 (delimiter) − 16 = 3993.
    public static let maximumPlaintextSize = maximumBodySize - headerSize - 1 - tagSize

    /// Encrypts `plaintext` for `subscription` with a fresh sender key and salt.
    /// - Throws: ``WebPushError`` with ``WebPushErrorCode/payloadTooLarge`` past
    ///   ``maximumPlaintextSize``, or ``WebPushErrorCode/invalidSubscription`` when the
    ///   subscription's `p256dh` is not a P-256 point.
    public static func encrypt(
        _ plaintext: [UInt8], for subscription: WebPushSubscription
    ) throws(WebPushError)
        -> [UInt8]
    {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        return try encrypt(
            plaintext, userAgentPublicKey: subscription.p256dh, authSecret: subscription.auth,
            senderKey: P256.KeyAgreement.PrivateKey(), salt: salt)
    }

    /// Encrypts with a given sender key and salt: for the RFC 8291 Appendix A test vector. Never
    /// reuse a sender key or salt for real messages.
    public static func encrypt(
        _ plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8], senderKey: P256.KeyAgreement.PrivateKey,
        salt: [UInt8], recordSize: UInt32 = UInt32(maximumBodySize)
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextSize else {
            throw WebPushError(
                code: .payloadTooLarge,
                message: "the payload is \(plaintext.count) bytes; one Web Push record holds \(maximumPlaintextSize)")
        }
        guard salt.count == 16 else {
            throw WebPushError(code: .invalidSubscription, message: "the salt must be 16 bytes")
        }
        let userAgentKey: P256.KeyAgreement.PublicKey
        do {
            userAgentKey = try P256.KeyAgreement.PublicKey(x963Representation: userAgentPublicKey)
        } catch {
            throw WebPushError(
                code: .invalidSubscription, message: "the subscription's p256dh is not an uncompressed P-256 point",
                underlying: error)
        }
        let senderPublic = Array(senderKey.publicKey.x963Representation)
        let (contentKey, nonce): (SymmetricKey, [UInt8])
        do {
            let shared = try senderKey.sharedSecretFromKeyAgreement(with: userAgentKey)
            (contentKey, nonce) = keys(
                shared: shared, authSecret: authSecret, userAgentPublic: userAgentPublicKey,
                senderPublic: senderPublic, salt: salt)
        } catch {
            throw WebPushError(
                code: .invalidSubscription, message: "ECDH with the subscription key failed", underlying: error)
        }
        do {
            let sealed = try AES.GCM.seal(plaintext + [0x02], using: contentKey, nonce: AES.GCM.Nonce(data: nonce))
            var body = salt
            body += withUnsafeBytes(of: recordSize.bigEndian, Array.init)
            body.append(UInt8(senderPublic.count))
            body += senderPublic
            body += sealed.ciphertext
            body += sealed.tag
            return body
        } catch {
            throw WebPushError(code: .invalidSubscription, message: "AES-GCM failed", underlying: error)
        }
    }

    /// The content-encryption key and nonce of RFC 8291 §3.4 and RFC 8188 §2.2–2.3.
    static func keys(
        shared: SharedSecret, authSecret: [UInt8], userAgentPublic: [UInt8], senderPublic: [UInt8], salt: [UInt8]
    ) -> (SymmetricKey, [UInt8]) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + userAgentPublic + senderPublic
        let inputKeyingMaterial = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKeyingMaterial, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0],
            outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKeyingMaterial, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0],
            outputByteCount: 12)
        return (contentKey, nonce.withUnsafeBytes { Array($0) })
    }
}
