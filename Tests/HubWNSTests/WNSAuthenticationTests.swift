import Foundation
import HubCore
import HubEmulators
import HubPolling
import HubTesting
import HubWNS
import Logging
import Testing

@Suite("WNS: classic and Entra ID access tokens")
struct WNSAuthenticationTests {
    @Test("the classic package-SID flow gets one token and reuses it")
    func classic() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            for _ in 0..<5 { #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted) }
            #expect(fixture.emulator.tokenRequests == 1)
            #expect(fixture.emulator.received(on: channel).count == 5)
            #expect(fixture.emulator.received.allSatisfy { $0.app == WNSFixture.sid })
        }
    }

    @Test("the plugin's transport renews its token by the hub's clock (TransportContext.clock)")
    func hubClock() async throws {
        let clock = ManualClock()
        // The emulator keeps the system's clock: only the transport's sees the day pass.
        let emulator = try await WNSEmulator.start()
        emulator.registerPackage(sid: WNSFixture.sid, secret: "package-secret")
        let app = CrossDeviceApp(
            id: WNSFixture.appID, name: "Notes", platforms: [.windows: [WNSFixture.package]],
            credentials: PushCredentials([WNSFixture.classic]))
        let context = TransportContext(
            settings: WNSFixture.configuration(for: emulator), apps: [app], signals: FeedSignals(clock: clock),
            logger: Logger(label: "test"), clock: clock)
        let transport = try #require(try WNSPlugin().makeTransport(context) as? WNSTransport)
        try await withShutdown([transport.shutdown, emulator.shutdown]) {
            let endpoint = Endpoint(
                id: "surface", appId: app.id, userId: "alice", platform: .windows, platformAppId: WNSFixture.package,
                transport: .wns, token: emulator.makeChannel(forApp: WNSFixture.sid), registeredAt: clock.date)
            #expect(await transport.send(.fixture(.shoulderTap, to: endpoint, app: app)) == .accepted)
            #expect(emulator.tokenRequests == 1)
            clock.advance(by: .seconds(86_400))
            #expect(await transport.send(.fixture(.shoulderTap, to: endpoint, app: app)) == .accepted)
            #expect(emulator.tokenRequests == 2, "renewed once the hub's clock passed the token's expiry")
        }
    }

    @Test("the Entra ID flow posts to the tenant's endpoint with the wns.windows.com scope")
    func entra() async throws {
        try await WNSFixture.with(credentials: WNSFixture.entra) { fixture in
            let channel = fixture.channel()
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
            #expect(fixture.emulator.tokenRequests == 1)
            #expect(fixture.emulator.received.first?.app == WNSFixture.clientID)
        }
    }

    @Test("concurrent sends before any token exists await one token request")
    func singleRequestInFlight() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
                for _ in 0..<20 {
                    group.addTask { await fixture.transport.send(fixture.outbound(channelURI: channel)) }
                }
                return await group.reduce(into: [DeliveryOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .accepted })
            #expect(fixture.emulator.tokenRequests == 1)
        }
    }

    @Test("a 401 gets a new token and one resend within the same send")
    func unauthorizedResendsOnce() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
            fixture.emulator.expireAccessTokens()
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel)) == .accepted)
            #expect(fixture.emulator.tokenRequests == 2)
            #expect(fixture.emulator.refusedSends == [401])
            #expect(fixture.emulator.received(on: channel).count == 2)
        }
    }

    @Test("a wrong secret suspends the delivery with what to check, and nothing reaches the channel")
    func wrongSecret() async throws {
        let wrong = WNSCredentials(authentication: .packageSID(sid: WNSFixture.sid, secret: Secret("not-it")))
        try await WNSFixture.with(credentials: wrong) { fixture in
            let outcome = await fixture.transport.send(fixture.outbound(channelURI: fixture.channel()))
            #expect(outcome.isSuspended, "got \(outcome)")
            #expect(outcome.reason.contains("credentials.wns"))
            #expect(!outcome.reason.contains("not-it"), "the secret is never in a reason")
            #expect(fixture.emulator.received.isEmpty)
        }
    }

    @Test("a channel URI on a host not allowed is refused at send time before any token is requested")
    func sendTimeRecheck() async throws {
        try await WNSFixture.with { fixture in
            let elsewhere = "https://127.0.0.2:\(fixture.emulator.port)/channels/x?token=y"
            let outcome = await fixture.transport.send(fixture.outbound(channelURI: elsewhere))
            #expect(outcome.isRejected)
            #expect(outcome.reason.contains("127.0.0.2"))
            #expect(fixture.emulator.tokenRequests == 0, "no access token was even requested")
        }
    }
}
