import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubWNS

@Suite("WNS transport: TransportConformance against the WNS emulator", .serialized)
struct WNSConformanceTests {
    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        try await WNSFixture.with { fixture in
            let emulator = fixture.emulator
            let app = fixture.app
            let owner = fixture.owner
            let conformance = TransportConformanceHarness(
                app: app, platform: .windows, platformAppId: WNSFixture.package, transport: .wns,
                workingToken: { emulator.makeChannel(forApp: owner) },
                deadToken: {
                    let channel = emulator.makeChannel(forApp: owner)
                    emulator.expireChannel(channel)
                    return channel
                },
                sendTimeLimit: .seconds(20))
            try await check.run(fixture.transport, conformance)
        }
    }
}
