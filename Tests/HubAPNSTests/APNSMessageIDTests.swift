import Foundation
import HubCore
import HubEmulators
import Testing

@testable import HubAPNS

@Suite("APNs: the reply carries the apns-id for the receipt")
struct APNSMessageIDTests {
    @Test("an accepted push and a refused one both carry the apns-id APNs answered with")
    func apnsID() async throws {
        try await APNSHarness.with { harness in
            let request = harness.request(APNSHarness.token(1))
            let reply = await harness.transport.transmit(request, credentials: harness.credentials)
            #expect(reply.outcome == .accepted)
            #expect(reply.messageId == request.apnsID)
            let recorded = try #require(harness.emulator.requests(to: APNSHarness.token(1)).first)
            #expect(recorded.header("apns-id") == reply.messageId)

            let delivery = harness.delivery(.shoulderTap, token: APNSHarness.token(2))
            let hubReply = await harness.transport.transmit(delivery)
            #expect(hubReply.outcome == .accepted)
            let sent = try #require(harness.emulator.requests(to: APNSHarness.token(2)).first)
            #expect(hubReply.messageId == sent.header("apns-id") && hubReply.messageId != nil)
        }
    }
}
