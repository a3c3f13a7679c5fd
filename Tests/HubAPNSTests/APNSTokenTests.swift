import Foundation
import HubCore
import Synchronization
import Testing

@testable import HubAPNS
@testable import HubEmulators

@Suite("APNs provider tokens: ES256 shape, reuse, refresh window, ExpiredProviderToken")
struct APNSTokenTests {
    /// The emulator's clock runs `offset` minutes ahead of the transport's.
    final class SkewedClock: Sendable {
        let base: ManualClock
        private let offset = Mutex<Double>(0)
        init(_ base: ManualClock) { self.base = base }
        var now: Date { base.now.addingTimeInterval(offset.withLock { $0 } * 60) }
        func setOffset(minutes: Double) { offset.withLock { $0 = minutes } }
    }

    private func authorization(_ harness: APNSHarness) -> [String] {
        harness.emulator.requests.compactMap { $0.header("authorization") }
    }

    @Test("the JWT has alg ES256 and kid in its header, iss and a whole-second iat in its claims")
    func shape() async throws {
        let clock = ManualClock()
        try await APNSHarness.with(emulator: { $0.now = { clock.now } }, transport: { $0.now = { clock.now } }) {
            harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            let header = try #require(authorization(harness).first)
            let parts = header.dropFirst("bearer ".count).split(separator: ".")
            try #require(parts.count == 3)
            func decode(_ part: Substring) -> APNSEmulator.JSON? {
                APNSEmulator.base64URLDecode(part).flatMap(APNSEmulator.JSON.parse)
            }
            let jose = try #require(decode(parts[0]))
            let claims = try #require(decode(parts[1]))
            #expect(jose["alg"] == .string("ES256") && jose["kid"] == .string(harness.key.keyID))
            #expect(claims["iss"] == .string(harness.key.teamID))
            #expect(claims["iat"] == .integer(Int64(clock.now.timeIntervalSince1970)))
        }
    }

    @Test("one token is reused for 50 minutes, then replaced; APNs accepts both on one connection")
    func refreshTiming() async throws {
        let clock = ManualClock()
        try await APNSHarness.with(emulator: { $0.now = { clock.now } }, transport: { $0.now = { clock.now } }) {
            harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            clock.advance(minutes: 30)
            #expect(await harness.send(APNSHarness.token(2)) == .accepted)
            clock.advance(minutes: 19.9)
            #expect(await harness.send(APNSHarness.token(3)) == .accepted)
            clock.advance(minutes: 0.2)
            #expect(await harness.send(APNSHarness.token(4)) == .accepted)
            let tokens = authorization(harness)
            try #require(tokens.count == 4, "\(harness.emulator.requests.map { "\($0.status) \($0.reason ?? "")" })")
            #expect(Set(tokens.prefix(3)).count == 1, "reused before 50 minutes")
            #expect(tokens.last != tokens.dropLast().last, "replaced at 50 minutes")
            #expect(harness.emulator.statistics.connectionsAccepted == 1)
        }
    }

    @Test("a refresh interval below 20 minutes is raised to 20; concurrent callers share one signature")
    func clampAndSharing() async throws {
        let clock = ManualClock()
        let provider = try APNSTokenProvider(
            keyID: "K", teamID: "T", privateKeyPEM: APNSTestKey().privateKeyPEM, refreshInterval: .seconds(60),
            now: { clock.now })
        let first = try await withThrowingTaskGroup(of: APNSTokenProvider.Token.self) { group in
            for _ in 0..<50 { group.addTask { try await provider.token() } }
            return try await group.reduce(into: Set<APNSTokenProvider.Token>()) { $0.insert($1) }
        }
        #expect(first.count == 1 && provider.signatureCount == 1)
        clock.advance(minutes: 19)
        #expect(try await provider.token() == first.first)
        clock.advance(minutes: 1)
        #expect(try await provider.token() != first.first)
        #expect(provider.signatureCount == 2)
    }

    @Test("a forced renewal is refused for a token younger than 20 minutes and shared when older")
    func renewal() async throws {
        let clock = ManualClock()
        let provider = try APNSTokenProvider(
            keyID: "K", teamID: "T", privateKeyPEM: APNSTestKey().privateKeyPEM, refreshInterval: .seconds(3000),
            now: { clock.now })
        let original = try await provider.token()
        clock.advance(minutes: 10)
        #expect(try await provider.renew(replacing: original) == nil)
        clock.advance(minutes: 15)
        let renewed = try #require(try await provider.renew(replacing: original))
        #expect(renewed != original)
        #expect(try await provider.renew(replacing: original) == renewed, "a second caller gets the same renewal")
        #expect(provider.signatureCount == 2)
    }

    @Test("ExpiredProviderToken: the send signs a new token and retries once, and is accepted")
    func expiredRetriedOnce() async throws {
        let clock = ManualClock()
        let emulatorClock = SkewedClock(clock)
        try await APNSHarness.with(emulator: { $0.now = { emulatorClock.now } }, transport: { $0.now = { clock.now } })
        { harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            clock.advance(minutes: 30)
            emulatorClock.setOffset(minutes: 31)  // the emulator sees the token as 61 minutes old
            #expect(await harness.send(APNSHarness.token(2)) == .accepted)
            let answers = harness.emulator.requests(to: APNSHarness.token(2)).map { "\($0.status) \($0.reason ?? "")" }
            #expect(answers == ["403 ExpiredProviderToken", "200 "])
            #expect(Set(authorization(harness)).count == 2)
        }
    }

    @Test("ExpiredProviderToken again after the new token: one re-sign only, then suspended (the host's clock)")
    func expiredTwice() async throws {
        let clock = ManualClock()
        try await APNSHarness.with(emulator: { $0.now = { clock.now } }, transport: { $0.now = { clock.now } }) {
            harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            clock.advance(minutes: 25)
            harness.emulator.fail(next: 5, status: 403, reason: "ExpiredProviderToken")
            let outcome = await harness.send(APNSHarness.token(2))
            #expect(outcome.isSuspended && outcome.reasonText.contains("clock"), "got \(outcome)")
            #expect(harness.emulator.requests(to: APNSHarness.token(2)).count == 2)
        }
    }

    @Test("ExpiredProviderToken for a young token means clock skew: no re-sign, a retry, one log line")
    func clockSkew() async throws {
        try await APNSHarness.with { harness in
            harness.emulator.fail(next: 3, status: 403, reason: "ExpiredProviderToken")
            for index in 1...3 {
                let outcome = await harness.send(APNSHarness.token(index))
                #expect(outcome.isRetry && outcome.reasonText.contains("clock skew"))
                #expect((outcome.retryAfter ?? .zero) > .seconds(60))
            }
            #expect(harness.emulator.requests.count == 3)
            #expect(Set(authorization(harness)).count == 1)
            #expect(harness.logs.count("clock", atLeast: .error) == 1)
        }
    }

    @Test("TooManyProviderTokenUpdates backs off and leaves the connection")
    func tooManyUpdates() async throws {
        try await APNSHarness.with { harness in
            harness.emulator.fail(status: 429, reason: "TooManyProviderTokenUpdates")
            let outcome = await harness.send(APNSHarness.token(1))
            #expect(outcome.isRetry && outcome.retryAfter == .seconds(60))
            #expect(await harness.send(APNSHarness.token(2)) == .accepted)
            #expect(harness.emulator.statistics.connectionsAccepted == 2)
        }
    }
}
