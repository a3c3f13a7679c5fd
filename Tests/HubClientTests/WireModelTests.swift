import Foundation
import Testing

@testable import HubClient

/// The hub's JSON of a notification, as HubServer writes it (the hand-written writer of the hot
/// path and the synthesized `Encodable`), read back by HubClient through the one shared
/// `NotificationResource`: what a device app sees is what the hub stored.
@Suite("One wire model: the server's notification JSON decodes into the client's model")
struct WireModelTests {
    /// The client's model of `data`, decoded as HubClient decodes every answer.
    private func clientModel(_ data: Data) throws -> UserNotification {
        UserNotification(try HubJSON.decoder.decode(NotificationResource.self, from: data), client: nil)
    }

    @Test("every field survives, by the hand-written writer and by JSONEncoder alike", arguments: WireCase.all)
    func notification(_ sent: WireCase) throws {
        for data in sent.encodings {
            let received = try clientModel(data)
            #expect(received.resource == sent.resource)
            #expect(received.id == sent.id && received.appNotificationId == sent.appNotificationId)
            #expect(received.groupName == sent.groupName && received.priority == sent.priority)
            #expect(received.rawContent == sent.rawContent && received.visualContent == sent.visualContent)
            #expect(received.targetPlatforms == sent.targetPlatforms)
            #expect(received.displayTimeToLive == sent.displayTimeToLive)
            #expect(received.expirationDateTime == sent.expirationDateTime)
            #expect(received.createdDateTime == sent.createdDateTime)
            #expect(received.lastModifiedDateTime == sent.lastModifiedDateTime)
            #expect(received.readState == sent.readState && received.userActionState == sent.userActionState)
            #expect(received.status == sent.status && received.changeVersion == sent.changeVersion)
        }
    }

    @Test("a feed page the server writes is the page the client reads")
    func feedPage() throws {
        let (page, data) = WireCase.feedPage()
        let read = try HubJSON.decoder.decode(FeedPageResource.self, from: data)
        #expect(read.changes == page.changes && read.cursor == "c-42" && read.hasMore)
    }

    @Test("values this client does not know yet decode (growing sets), not fail")
    func growingSets() throws {
        let received = try clientModel(WireCase.unknownValues())
        #expect(received.status.rawValue == "archived" && received.targetPlatforms.map(\.rawValue) == ["visionos"])
    }
}
