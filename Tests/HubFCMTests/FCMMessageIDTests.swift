import Foundation
import HubCore
import HubFCM
import Testing

@Suite("FCM: the reply carries the message name for the receipt")
struct FCMMessageIDTests {
    @Test("an accepted send carries projects/{project}/messages/{id}; a refused one none")
    func messageName() async throws {
        try await FCMFixture.with { fixture in
            let reply = await fixture.transport.transmit(fixture.outbound())
            #expect(reply.outcome == .accepted)
            let name = try #require(reply.messageId)
            #expect(name.hasPrefix("projects/") && name.contains("/messages/") && !name.hasSuffix("/"), "\(name)")
            let second = await fixture.transport.transmit(fixture.outbound(token: "device-token-2"))
            #expect(second.messageId != name, "each message has its own name")
            let unsendable = await fixture.transport.transmit(fixture.outbound(token: ""))
            #expect(unsendable.messageId == nil)
        }
    }
}
