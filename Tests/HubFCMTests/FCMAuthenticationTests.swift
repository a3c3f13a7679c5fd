import Foundation
import HubCore
import HubPolling
import HubTesting
import JWTKit
import Logging
import Synchronization
import Testing

@testable import HubEmulators
@testable import HubFCM

@Suite("FCM: OAuth service-account flow against the emulator's token endpoint")
struct FCMAuthenticationTests {
    @Test("the RS256 assertion passes the emulator's checks and the access token is reused across sends")
    func assertionAndCaching() async throws {
        try await FCMFixture.with { fixture in
            for index in 0..<10 {
                #expect(await fixture.transport.send(fixture.outbound(token: "t\(index)")) == .accepted)
            }
            #expect(fixture.emulator.rejectedAssertions.isEmpty)
            #expect(fixture.emulator.tokenExchanges == 1, "one assertion for ten sends")
            #expect(fixture.emulator.messages.count == 10)
        }
    }

    @Test("the plugin's transport signs its assertion on the hub's clock (TransportContext.clock)")
    func hubClock() async throws {
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_900_000_000))
        // The emulator on the same clock refuses an assertion from the system's clock, years earlier.
        let emulator = try await FCMEmulator.start(now: { clock.date })
        try await emulator.register(.primary)
        let credentials = FCMTestServiceAccount.primary.credentials(tokenURI: emulator.tokenURI)
        let app = CrossDeviceApp(
            id: FCMFixture.appID, name: "Notes", platforms: [.android: [FCMFixture.package]],
            credentials: PushCredentials([credentials]))
        let settings = FCMConfiguration(sendBaseURL: emulator.baseURL, trustRootsPEM: [emulator.trustRootPEM])
        let context = TransportContext(
            settings: settings, apps: [app], signals: FeedSignals(clock: clock), logger: Logger(label: "test"),
            clock: clock)
        let transport = try #require(try FCMPlugin().makeTransport(context) as? FCMTransport)
        try await withShutdown([transport.shutdown, emulator.shutdown]) {
            let endpoint = Endpoint(
                id: "android", appId: app.id, userId: "alice", platform: .android, platformAppId: FCMFixture.package,
                transport: .fcm, token: "device-token-1", registeredAt: clock.date)
            #expect(await transport.send(.fixture(.shoulderTap, to: endpoint, app: app)) == .accepted)
            #expect(emulator.rejectedAssertions.isEmpty)
            #expect(emulator.tokenExchanges == 1)
        }
    }

    @Test("concurrent sends before any token exists await one exchange")
    func singleRefreshInFlight() async throws {
        try await FCMFixture.with { fixture in
            let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
                for index in 0..<25 {
                    group.addTask { await fixture.transport.send(fixture.outbound(token: "t\(index)")) }
                }
                return await group.reduce(into: [DeliveryOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .accepted })
            #expect(fixture.emulator.tokenExchanges == 1)
        }
    }

    @Test("the token is renewed shortly before expires_in runs out, by the injected clock")
    func renewalBeforeExpiry() async throws {
        let clock = TestClock()
        try await FCMFixture.with(clock: clock, configure: { $0.tokenRefreshMargin = .seconds(120) }) { fixture in
            fixture.emulator.setAccessTokenLifetime(seconds: 600)
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            clock.advance(by: 470)
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            #expect(fixture.emulator.tokenExchanges == 1, "still 130 s before expiry: the cached token is used")
            clock.advance(by: 20)
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            #expect(fixture.emulator.tokenExchanges == 2, "within the 120 s margin: a new token")
        }
    }

    @Test("a 401 from messages:send gets a new access token and one resend within the same send")
    func unauthorizedRefreshesOnce() async throws {
        try await FCMFixture.with { fixture in
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            fixture.emulator.expireAccessTokens()
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            #expect(fixture.emulator.tokenExchanges == 2)
            #expect(fixture.emulator.messages.count == 2, "the refused attempt was not delivered")
        }
    }

    @Test("an assertion signed with another key is refused; the delivery is suspended with what to check")
    func wrongKey() async throws {
        try await FCMFixture.with { fixture in
            var app = fixture.app
            var credentials = fixture.credentials
            credentials.privateKey = Secret(FCMTestServiceAccount.secondary.privateKeyPEM)
            app.credentials.fcm = credentials
            var outbound = fixture.outbound()
            outbound.app = app
            let outcome = await fixture.transport.send(outbound)
            guard case .suspended(let reason) = outcome else {
                Issue.record("expected a suspension, got \(outcome)")
                return
            }
            #expect(reason.contains("invalid_grant") && reason.contains("Invalid JWT Signature"))
            #expect(fixture.emulator.messages.isEmpty)
        }
    }

    @Test("the emulator refuses an assertion from a clock two hours off (iat/exp out of its window)")
    func clockSkew() async throws {
        try await FCMFixture.with(configure: { configuration in
            configuration.now = { Date().addingTimeInterval(-7200) }
        }) { fixture in
            let outcome = await fixture.transport.send(fixture.outbound())
            #expect(outcome.reason.contains("short-lived token"))
            #expect(fixture.emulator.rejectedAssertions.count == 1)
        }
    }

    @Test("the assertion's iat and exp are whole seconds whatever the clock's fraction; the emulator refuses fractions")
    func wholeSeconds() async throws {
        let fraction = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) + 0.75)
        try await FCMFixture.with(configure: { configuration in
            configuration.now = { fraction }
        }) { fixture in
            #expect(await fixture.transport.send(fixture.outbound()) == .accepted)
            #expect(fixture.emulator.rejectedAssertions.isEmpty, "\(fixture.emulator.rejectedAssertions)")
        }
        // An assertion with a fractional iat, signed with the account's own key, is refused.
        try await FCMFixture.with { fixture in
            let account = FCMTestServiceAccount.primary
            let keys = JWTKeyCollection()
            await keys.add(
                rsa: try Insecure.RSA.PrivateKey(pem: account.privateKeyPEM), digestAlgorithm: .sha256,
                kid: JWKIdentifier(string: account.privateKeyID))
            let claims = FractionalAssertion(
                iss: account.clientEmail, scope: "https://www.googleapis.com/auth/firebase.messaging",
                aud: fixture.emulator.tokenURI, iat: fraction.timeIntervalSince1970,
                exp: fraction.timeIntervalSince1970 + 3600)
            let assertion = try await keys.sign(claims, kid: JWKIdentifier(string: account.privateKeyID))
            let problem = await fixture.emulator.check(assertion)
            guard case .failure(let refusal) = problem else {
                Issue.record("a fractional iat was accepted")
                return
            }
            #expect(refusal.description.contains("iat must be whole seconds"), "\(refusal)")
        }
    }

    @Test("the emulator refuses an assertion whose aud is not its token URI")
    func audience() async throws {
        try await FCMFixture.with { fixture in
            var app = fixture.app
            app.credentials.fcm?.tokenURI = fixture.emulator.tokenURI + "?audience=elsewhere"
            var outbound = fixture.outbound()
            outbound.app = app
            let outcome = await fixture.transport.send(outbound)
            #expect(outcome.reason.contains("Failed audience check"))
        }
    }

    @Test("validate(credentials:) checks a service account with a validate-only message and explains failures")
    func validate() async throws {
        try await FCMFixture.with { fixture in
            try await fixture.transport.validate(credentials: fixture.credentials)
            let probe = try #require(fixture.emulator.messages.first)
            #expect(probe.validateOnly && probe.topic != nil && probe.token == nil)

            var foreign = FCMTestServiceAccount.secondary.credentials(tokenURI: fixture.emulator.tokenURI)
            foreign.clientEmail = "unknown@elsewhere.iam.gserviceaccount.com"
            do {
                try await fixture.transport.validate(credentials: foreign)
                Issue.record("an unknown account validated")
            } catch let error as FCMError {
                #expect(error.code == .authenticationFailed)
                #expect(error.description.contains("account not found"))
            }
        }
    }
}

/// Assertion claims written by hand, times as plain numbers (a fraction included).
private struct FractionalAssertion: JWTPayload {
    var iss: String
    var scope: String
    var aud: String
    var iat: Double
    var exp: Double
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
