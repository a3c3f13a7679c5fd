import Foundation
import HubCore
import Testing

@testable import HubServer

// The server side of WireModelTests, in a file of its own: HubCore's and HubClient's
// `UserNotification` are different types of the same name, and a file that imports both modules
// cannot name either (`HubClient.` means the class).

/// One notification the hub stored, what HubServer writes for it, and the fields a device must see.
struct WireCase: Sendable, CustomTestStringConvertible {
    /// Its JSON from the hand-written writer (the hot path) and from the synthesized `Encodable`.
    var encodings: [Data]
    var resource: NotificationResource
    var id: String
    var appNotificationId: String
    var groupName: String?
    var priority: NotificationPriority
    var rawContent: String?
    var visualContent: VisualContent?
    var targetPlatforms: [Platform]
    var displayTimeToLive: Int?
    var expirationDateTime: Date
    var createdDateTime: Date
    var lastModifiedDateTime: Date
    var readState: ReadState
    var userActionState: UserActionState
    var status: NotificationStatus
    var changeVersion: Int64

    var testDescription: String { appNotificationId }

    init(_ sent: UserNotification) throws {
        resource = NotificationResource(sent)
        encodings = [JSON.data(resource), try JSON.encoder().encode(resource)]
        id = sent.id
        appNotificationId = sent.appNotificationId
        groupName = sent.groupName
        priority = sent.priority
        rawContent = sent.payload.rawContent
        visualContent = sent.payload.visualContent
        targetPlatforms = sent.targetPolicy.platformTypes
        displayTimeToLive = sent.displayTimeToLive
        expirationDateTime = sent.expirationDateTime
        createdDateTime = sent.createdDateTime
        lastModifiedDateTime = sent.lastModifiedDateTime
        readState = sent.readState
        userActionState = sent.userActionState
        status = sent.status
        changeVersion = sent.changeVersion
    }

    /// Times in whole milliseconds: the API's precision.
    static let base = Date(timeIntervalSince1970: 1_764_000_000.125)

    static let all: [WireCase] = try! [
        UserNotification(
            id: "n1", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-1",
            payload: NotificationPayload(rawContent: "raw"), expirationDateTime: base.addingTimeInterval(86_400),
            createdDateTime: base, lastModifiedDateTime: base),
        UserNotification(
            id: "n2", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a \"2\"/x",
            groupName: "group 1", priority: .high,
            payload: NotificationPayload(
                rawContent: "{\"k\":1}",
                visualContent: VisualContent(
                    title: "Title 🙂", body: "b", titleLocKey: "T", titleLocArgs: ["x"], bodyLocKey: "B",
                    bodyLocArgs: [], badge: 0, tile: true)),
            targetPolicy: TargetPolicy(platformTypes: [.ios, .windows]), displayTimeToLive: 3600,
            expirationDateTime: base.addingTimeInterval(600), fallbackPolicy: nil,
            createdDateTime: Date(timeIntervalSince1970: 0), lastModifiedDateTime: base.addingTimeInterval(1.5),
            readState: .read, userActionState: .dismissed, status: .deleted, changeVersion: 9_007_199_254_740_993),
    ].map(WireCase.init)

    /// A feed page of every case, as the server writes it.
    static func feedPage() -> (page: FeedPageResource, data: Data) {
        let page = FeedPageResource(changes: all.map(\.resource), cursor: "c-42", hasMore: true)
        return (page, JSON.data(page))
    }

    /// The first case with values this client version does not know, as the server writes it.
    static func unknownValues() -> Data {
        var resource = all[0].resource
        resource.status = NotificationStatus(rawValue: "archived")
        resource.targetPolicy = TargetPolicy(platformTypes: [Platform(rawValue: "visionos")])
        return JSON.data(resource)
    }
}
