import Foundation
import HubCore
import HubEmulators
import Synchronization
import Testing

@testable import HubServer

/// The identity verifier remembers tokens it verified (``VerifiedTokens``) without ever accepting
/// one a full check would refuse.
@Suite("Verified tokens: remembered until they expire, forgotten with the keys")
struct VerifiedTokensTests {
    static let secret = "hs256-shared-secret-for-verified-tokens"
    static let issuer = "https://auth.example.com"

    /// Two apps trusting one issuer and secret, each with its own audience.
    static func verifier(now: @escaping @Sendable () -> Date) -> IdentityVerifier {
        let apps = ["one.example.com", "two.example.com"].map { id in
            CrossDeviceApp(
                id: id, name: id, platforms: [.android: ["com.example"]],
                identity: [
                    IdentityRegistration(
                        issuer: issuer, audiences: ["\(id)-client"],
                        keys: .secret(Secret(secret, source: "env:SECRET")))
                ])
        }
        return IdentityVerifier(apps: apps, now: now)
    }

    static func token(
        app: String = "one.example.com", user: String = "alice", expiresIn: TimeInterval = 600
    )
        async throws -> String
    {
        try await TestUserClaims(user: user, issuer: issuer, audience: "\(app)-client", expiresIn: expiresIn)
            .signed(secret: secret)
    }

    @Test("a token verified once is answered from memory until exp plus the leeway, then refused")
    func rememberedUntilExpiry() async throws {
        let clock = Mutex(Date())
        let verifier = Self.verifier { clock.withLock { $0 } }
        try await verifier.loadKeys()
        let token = try await Self.token(expiresIn: 600)
        #expect(try await verifier.verify(token: token, app: "one.example.com") == "alice")
        #expect(try await verifier.verify(token: token, app: "one.example.com") == "alice")
        #expect(verifier.verificationCounts.signatures == 1, "the second request checked no signature")
        #expect(verifier.verificationCounts.remembered == 1)

        clock.withLock { $0 = $0.addingTimeInterval(600 + IdentityVerifier.leeway - 5) }
        #expect(try await verifier.verify(token: token, app: "one.example.com") == "alice")
        clock.withLock { $0 = $0.addingTimeInterval(10) }
        await #expect(throws: Problem.self) { try await verifier.verify(token: token, app: "one.example.com") }
        #expect(verifier.verificationCounts.signatures == 2, "past its expiry the token is checked again, and refused")
    }

    @Test("loading the keys again forgets every token")
    func forgottenWithTheKeys() async throws {
        let verifier = Self.verifier { Date() }
        try await verifier.loadKeys()
        let token = try await Self.token()
        _ = try await verifier.verify(token: token, app: "one.example.com")
        try await verifier.loadKeys()
        #expect(verifier.verificationCounts.remembered == 0)
        _ = try await verifier.verify(token: token, app: "one.example.com")
        #expect(verifier.verificationCounts.signatures == 2)
    }

    @Test("a token remembered for one app is checked in full for another, and refused there")
    func rememberedPerApp() async throws {
        let verifier = Self.verifier { Date() }
        try await verifier.loadKeys()
        let token = try await Self.token(app: "one.example.com")
        _ = try await verifier.verify(token: token, app: "one.example.com")
        await #expect(throws: Problem.self) { try await verifier.verify(token: token, app: "two.example.com") }
        #expect(verifier.verificationCounts.signatures == 2)
    }

    @Test("a refused token is never remembered; a different token of the same user is checked")
    func refusedNotRemembered() async throws {
        let verifier = Self.verifier { Date() }
        try await verifier.loadKeys()
        let expired = try await Self.token(expiresIn: -120)
        for _ in 0..<2 {
            await #expect(throws: Problem.self) { try await verifier.verify(token: expired, app: "one.example.com") }
        }
        #expect(verifier.verificationCounts == (signatures: 2, remembered: 0))
        // A character inside the signature (all six of its bits count; the last one's do not all).
        var forged = Array(try await Self.token())
        let index = forged.count - 5
        forged[index] = forged[index] == "A" ? "B" : "A"
        await #expect(throws: Problem.self) { try await verifier.verify(token: String(forged), app: "one.example.com") }
        #expect(verifier.verificationCounts.remembered == 0)
    }

    @Test("memory is bounded: two generations of the limit")
    func bounded() {
        var tokens = VerifiedTokens(limit: 3)
        for index in 0..<10 {
            tokens.insert(.init(app: "a", token: "t\(index)"), user: "u\(index)", acceptedUntil: 100)
        }
        #expect(tokens.count <= 6)
        #expect(tokens.user(.init(app: "a", token: "t9"), at: 50) == "u9")
        #expect(tokens.user(.init(app: "a", token: "t0"), at: 50) == nil, "the oldest were forgotten")
        #expect(tokens.user(.init(app: "a", token: "t9"), at: 100) == nil, "at acceptedUntil it is refused")
    }
}
