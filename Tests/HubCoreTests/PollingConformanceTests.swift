import Foundation
import HubCore
import HubPolling
import HubTesting
import Testing

@Suite("polling transport: TransportConformance")
struct PollingConformanceTests {
    @Test("passes the transport conformance suite", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        let app = TestHub.app
        // Polling has no provider that reports endpoints gone: the dead-endpoint check is skipped.
        let harness = TransportConformanceHarness(
            app: app,
            workingEndpoint: {
                TransportConformance.endpoint(
                    platform: .windows, platformAppId: "Contoso.Notes_8wekyb3d8bbwe", transport: .polling,
                    token: nil, appId: app.id)
            },
            sendTimeLimit: .seconds(5))
        try await check.run(PollingTransport(signals: FeedSignals()), harness)
    }
}
