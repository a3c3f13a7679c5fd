import Foundation
import HubCore
import HubPolling
import HubTesting
import Logging
import Testing

@testable import HubAPNS
@testable import HubEmulators

@Suite("APNs: the transport the plugin makes reads the hub's clock (TransportContext.clock)")
struct APNSHubClockTests {
    @Test("the provider token's iat is the hub clock's, and the token is renewed when that clock has moved 50 minutes")
    func providerTokenFollowsTheHubClock() async throws {
        let start = Date(timeIntervalSince1970: 1_900_000_000)
        let clock = HubTesting.ManualClock(date: start)
        // APNs on the same clock: a token signed on the system's clock (years earlier) is refused as expired.
        var emulatorConfiguration = APNSEmulator.Configuration()
        emulatorConfiguration.now = { clock.date }
        let emulator = try await APNSEmulator.start(emulatorConfiguration)
        let key = APNSTestKey()
        emulator.register(key, bundleIDs: [APNSHarness.bundleID])
        var settings = APNSTransport.Configuration(
            productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: emulator.port,
            trustRoots: .pem(emulator.trustRootPEM))
        settings.requestTimeout = .seconds(30)
        var app = APNSHarness.app
        app.credentials.apns = key.credentials()
        let context = TransportContext(
            settings: settings, apps: [app], signals: FeedSignals(clock: clock), logger: Logger(label: "test"),
            clock: clock)
        let transport = try #require(try APNSPlugin().makeTransport(context) as? APNSTransport)
        try await withShutdown([{ await transport.shutdown(grace: .milliseconds(200)) }, emulator.shutdown]) {
            func send(_ index: Int) async -> DeliveryOutcome {
                await transport.send(
                    APNSRequest(
                        deviceToken: APNSHarness.token(index), environment: .production,
                        bundleID: APNSHarness.bundleID, payload: .background()),
                    credentials: key.credentials())
            }
            #expect(await send(1) == .accepted)
            clock.advance(by: .seconds(49 * 60))
            #expect(await send(2) == .accepted)
            clock.advance(by: .seconds(60))
            #expect(await send(3) == .accepted)
            let tokens = emulator.requests.compactMap { $0.header("authorization") }
            try #require(tokens.count == 3, "\(emulator.requests.map { "\($0.status) \($0.reason ?? "")" })")
            #expect(tokens[0] == tokens[1], "reused for 49 minutes of the hub's clock")
            #expect(tokens[2] != tokens[1], "renewed at 50 minutes of the hub's clock")
            #expect(
                tokens.map(Self.issuedAt) == [start, start, start + 50 * 60].map { Int64($0.timeIntervalSince1970) })
        }
    }

    /// The `iat` claim of `bearer <JWT>`.
    static func issuedAt(_ authorization: String) -> Int64? {
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".")
        guard parts.count == 3, let claims = APNSEmulator.base64URLDecode(parts[1]).flatMap(APNSEmulator.JSON.parse),
            case .integer(let iat)? = claims["iat"]
        else { return nil }
        return iat
    }
}
