import Foundation
import HubCore
import HubWebPush
import Testing

@Suite("Web Push: the reply carries the Location for the receipt")
struct WebPushMessageIDTests {
    @Test("an accepted push carries the push service's Location of the message; a refused one none")
    func location() async throws {
        try await WebPushFixture.with { fixture in
            let subscription = fixture.subscription()
            let reply = await fixture.transport.transmit(fixture.outbound(subscription))
            #expect(reply.outcome == .accepted)
            let location = try #require(reply.messageId)
            #expect(location.hasPrefix("https://") && location.contains("/messages/"), "\(location)")
            fixture.emulator.failNextSends(1, status: 410)
            #expect(await fixture.transport.transmit(fixture.outbound(subscription)).messageId == nil)
        }
    }
}
