import Foundation
import HubCore
import HubWNS
import Testing

@Suite("WNS: the reply carries X-WNS-Msg-ID for the receipt")
struct WNSMessageIDTests {
    @Test("an accepted send carries the message ID WNS answered with")
    func messageID() async throws {
        try await WNSFixture.with { fixture in
            let reply = await fixture.transport.transmit(fixture.outbound(channelURI: fixture.channel()))
            #expect(reply.outcome == .accepted)
            let id = try #require(reply.messageId)
            #expect(id.count == 16 && id.allSatisfy(\.isHexDigit), "\(id)")
        }
    }
}
