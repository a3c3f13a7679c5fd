import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubAPNS

@Suite("APNs transport: TransportConformance against the APNs emulator", .serialized)
struct APNSConformanceTests {
    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        try await APNSHarness.with { harness in
            var app = APNSHarness.app
            app.credentials.apns = harness.credentials
            let emulator = harness.emulator
            let conformance = TransportConformanceHarness(
                app: app, platform: .ios, platformAppId: APNSHarness.bundleID, transport: .apns,
                attributes: ["environment": "production"],
                workingToken: { APNSHarness.token(Int.random(in: 0..<1_000_000)) },
                deadToken: {
                    let token = APNSHarness.token(Int.random(in: 1_000_000..<2_000_000))
                    emulator.markUnregistered(token: token, at: Date(timeIntervalSinceNow: -60))
                    return token
                },
                sendTimeLimit: .seconds(20))
            try await check.run(harness.transport, conformance)
        }
    }
}
