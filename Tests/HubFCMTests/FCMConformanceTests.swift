import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubFCM

@Suite("FCM transport: TransportConformance against the FCM emulator", .serialized)
struct FCMConformanceTests {
    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        try await FCMFixture.with { fixture in
            let emulator = fixture.emulator
            let app = fixture.app
            let conformance = TransportConformanceHarness(
                app: app, platform: .android, platformAppId: FCMFixture.package, transport: .fcm,
                workingToken: { "device-\(UUID().uuidString)" },
                deadToken: {
                    let token = "gone-\(UUID().uuidString)"
                    emulator.setFailure(.unregistered, forToken: token)
                    return token
                },
                sendTimeLimit: .seconds(20))
            try await check.run(fixture.transport, conformance)
        }
    }
}
