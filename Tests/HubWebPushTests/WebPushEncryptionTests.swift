import Crypto
import Foundation
import Testing

@testable import HubWebPush

@Suite("Web Push encryption (RFC 8291 aes128gcm)")
struct WebPushEncryptionTests {
    // RFC 8291 Appendix A.
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let senderPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let userAgentPublic =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_"
        + "yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test("reproduces the RFC 8291 Appendix A message byte for byte")
    func rfcVector() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: B64.decode(Self.senderPrivate))
        #expect(B64.encode(Array(sender.publicKey.x963Representation)) == Self.senderPublic)
        let body = try WebPushEncryption.encrypt(
            Array(Self.plaintext.utf8), userAgentPublicKey: B64.decode(Self.userAgentPublic),
            authSecret: B64.decode(Self.authSecret), senderKey: sender, salt: B64.decode(Self.salt))
        #expect(B64.encode(body) == Self.body)
    }

    @Test("a fresh salt and sender key per message, header as RFC 8188 lays it out")
    func freshKeys() throws {
        let subscription = WebPushSubscription(
            endpoint: "https://push.example.com/x", p256dh: B64.decode(Self.userAgentPublic),
            auth: B64.decode(Self.authSecret))
        let first = try WebPushEncryption.encrypt(Array("hi".utf8), for: subscription)
        let second = try WebPushEncryption.encrypt(Array("hi".utf8), for: subscription)
        #expect(first.count == 86 + 2 + 1 + 16)
        #expect(Array(first[16..<21]) == [0, 0, 0x10, 0, 65])
        #expect(first[21] == 0x04)
        #expect(first[0..<16] != second[0..<16])
        #expect(first[21..<86] != second[21..<86])
    }

    @Test("3,993 bytes of plaintext fill the 4,096-byte record; one more is refused before sending")
    func sizeLimit() throws {
        let subscription = WebPushSubscription(
            endpoint: "https://push.example.com/x", p256dh: B64.decode(Self.userAgentPublic),
            auth: B64.decode(Self.authSecret))
        let body = try WebPushEncryption.encrypt(Array(repeating: 0x61, count: 3993), for: subscription)
        #expect(body.count == 4096)
        #expect(throws: WebPushError.self) {
            try WebPushEncryption.encrypt(Array(repeating: 0x61, count: 3994), for: subscription)
        }
    }

    @Test("a p256dh that is not a curve point is refused")
    func badKey() {
        var point = B64.decode(Self.userAgentPublic)
        point[40] ^= 0xFF
        let subscription = WebPushSubscription(
            endpoint: "https://x.example/p", p256dh: point, auth: B64.decode(Self.authSecret))
        #expect(throws: WebPushError.self) { try WebPushEncryption.encrypt([1], for: subscription) }
    }
}
