import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubWebPush

@Suite("Web Push transport: TransportConformance against the Web Push emulator", .serialized)
struct WebPushConformanceTests {
    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        try await WebPushFixture.with { fixture in
            let emulator = fixture.emulator
            let key = fixture.vapid.key.publicKey
            let conformance = TransportConformanceHarness(
                app: fixture.app, platform: .web, platformAppId: WebPushFixture.origin, transport: .webpush,
                workingToken: { emulator.makeSubscription(applicationServerKey: key).json },
                deadToken: {
                    let subscription = emulator.makeSubscription(applicationServerKey: key)
                    emulator.expire(subscription)
                    return subscription.json
                },
                sendTimeLimit: .seconds(20))
            try await check.run(fixture.transport, conformance)
        }
    }
}
