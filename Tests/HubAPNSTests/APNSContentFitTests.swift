import Foundation
import HubAPNS
import HubCore
import HubEmulators
import Testing

@Suite("APNs: content that fits, localisation keys and badge over the wire")
struct APNSContentFitTests {
    static func notification(_ visual: VisualContent) -> UserNotification {
        UserNotification(
            id: "n-1", appId: APNSHarness.app.id, userId: "alice", appNotificationId: "meeting-42",
            priority: .high, payload: NotificationPayload(visualContent: visual),
            expirationDateTime: Date(timeIntervalSince1970: 2_000_000_000), createdDateTime: Date(),
            lastModifiedDateTime: Date())
    }

    /// `aps.alert` and `aps` of the payload the emulator accepted.
    static func aps(_ request: APNSEmulator.Request) throws -> [String: Any] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(request.payload)) as? [String: Any])
        return try #require(root["aps"] as? [String: Any])
    }

    @Test("a body of combining marks too long for 4096 bytes arrives cut between whole characters with '…'")
    func longBodyIsTrimmed() async throws {
        try await APNSHarness.with { harness in
            let letter = "e\u{301}\u{323}"  // one Character, 5 bytes
            let body = String(repeating: letter, count: 1000)
            let delivery = harness.delivery(
                .visible, token: APNSHarness.token(1),
                notification: Self.notification(VisualContent(title: "Accents", body: body)))
            #expect(await harness.transport.send(delivery) == .accepted)
            let request = try #require(harness.emulator.requests.first)
            #expect(request.status == 200 && request.payload.count <= 4096 && request.payload.count > 4096 - 8)
            let alert = try #require(try Self.aps(request)["alert"] as? [String: Any])
            let sent = try #require(alert["body"] as? String)
            #expect(sent.hasSuffix("…"))
            #expect(sent.dropLast().unicodeScalars.count.isMultiple(of: 3), "no letter lost its marks")
            #expect(alert["title"] as? String == "Accents")
        }
    }

    @Test("a title too long on its own is cut after the body was left out")
    func longTitleIsTrimmed() async throws {
        try await APNSHarness.with { harness in
            let title = String(repeating: "T", count: 5000)
            let delivery = harness.delivery(
                .visible, token: APNSHarness.token(1),
                notification: Self.notification(VisualContent(title: title, body: "short")))
            #expect(await harness.transport.send(delivery) == .accepted)
            let request = try #require(harness.emulator.requests.first)
            let alert = try #require(try Self.aps(request)["alert"] as? [String: Any])
            #expect(alert["body"] == nil)
            #expect((alert["title"] as? String)?.hasSuffix("T…") == true)
        }
    }

    @Test("loc keys, loc args and the badge from visualContent reach APNs as Apple names them")
    func localisationAndBadge() async throws {
        try await APNSHarness.with { harness in
            let visual = VisualContent(
                title: "New message", body: "Alice: lunch?", titleLocKey: "NEW_TITLE", titleLocArgs: ["2"],
                bodyLocKey: "NEW_BODY", bodyLocArgs: ["Alice", "lunch?"], badge: 5)
            let delivery = harness.delivery(
                .visible, token: APNSHarness.token(1), notification: Self.notification(visual))
            #expect(await harness.transport.send(delivery) == .accepted)
            let aps = try Self.aps(try #require(harness.emulator.requests.first))
            #expect((aps["badge"] as? NSNumber)?.intValue == 5)
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title-loc-key"] as? String == "NEW_TITLE")
            #expect(alert["title-loc-args"] as? [String] == ["2"])
            #expect(alert["loc-key"] as? String == "NEW_BODY")
            #expect(alert["loc-args"] as? [String] == ["Alice", "lunch?"])
            #expect(alert["title"] as? String == "New message" && alert["body"] as? String == "Alice: lunch?")
        }
    }
}
