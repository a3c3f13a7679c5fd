import Foundation
import HTTPTypes
import HubServer
import HummingbirdTesting
import Testing

@Suite("Publisher routes: visualContent's localisation keys, badge and tile")
struct VisualContentRoutesTests {
    static let full = """
        {"appNotificationId": "loc-1", "payload": {"visualContent": {
          "title": "New message", "body": "Alice: lunch?",
          "titleLocKey": "NEW_TITLE", "titleLocArgs": ["2"],
          "bodyLocKey": "NEW_BODY", "bodyLocArgs": ["Alice", "lunch?"],
          "badge": 3, "tile": true}}}
        """

    @Test("the new fields are stored and returned by the publish, the history and the one-notification read")
    func returned() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let created = try await client.publish(Self.full, user: "alice")
            #expect(created.status == .created, "\(created.text)")
            let base = "/v1/apps/\(Harness.notes)/users/alice/notifications"
            let read = try await client.send(.get, base + "/loc-1", bearer: Harness.notesKey)
            let history = try await client.send(.get, base, bearer: Harness.notesKey)
            let listed = history.object.objects("notifications").first ?? [:]
            for resource in [created.object, read.object, listed] {
                let visual = try #require((resource["payload"] as? [String: Any])?["visualContent"] as? [String: Any])
                #expect(visual["titleLocKey"] as? String == "NEW_TITLE")
                #expect(visual["titleLocArgs"] as? [String] == ["2"])
                #expect(visual["bodyLocKey"] as? String == "NEW_BODY")
                #expect(visual["bodyLocArgs"] as? [String] == ["Alice", "lunch?"])
                #expect(visual["badge"] as? Int == 3)
                #expect(visual["tile"] as? Bool == true)
            }
            let plain = try await client.publish(notification("plain"), user: "alice")
            let visual = (plain.object["payload"] as? [String: Any])?["visualContent"] as? [String: Any]
            #expect(Set(visual?.keys.map { $0 } ?? []) == ["title", "body"], "absent fields stay absent")
        }
    }

    @Test("wrong types and values are one 400 naming each field and what to fix")
    func fieldErrors() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let wrongTypes = """
                {"appNotificationId": "bad-1", "payload": {"visualContent": {"title": "T",
                  "titleLocKey": 7, "titleLocArgs": "x", "bodyLocKey": "K", "bodyLocArgs": ["a", 2],
                  "badge": 1.5, "tile": "yes"}}}
                """
            let types = try await client.publish(wrongTypes, user: "alice")
            #expect(types.status == .badRequest)
            #expect(
                types.errorFields.sorted() == [
                    "payload.visualContent.badge", "payload.visualContent.bodyLocArgs[1]",
                    "payload.visualContent.tile", "payload.visualContent.titleLocArgs",
                    "payload.visualContent.titleLocKey",
                ], "\(types.text)")
            #expect(types.text.contains("must be true or false"))

            let wrongValues = """
                {"appNotificationId": "bad-2", "payload": {"visualContent": {"title": "T",
                  "titleLocKey": " ", "bodyLocArgs": ["a"], "badge": -1}}}
                """
            let values = try await client.publish(wrongValues, user: "alice")
            #expect(values.status == .badRequest)
            #expect(
                values.errorFields.sorted() == [
                    "payload.visualContent.badge", "payload.visualContent.bodyLocArgs",
                    "payload.visualContent.titleLocKey",
                ], "\(values.text)")
            #expect(values.text.contains("needs bodyLocKey"))
            #expect(values.text.contains("from 0 (clears the badge)"))

            let tooBig = #"{"appNotificationId":"bad-3","payload":{"visualContent":{"title":"T","badge":2147483648}}}"#
            #expect(try await client.publish(tooBig, user: "alice").errorFields == ["payload.visualContent.badge"])
            let nul =
                #"{"appNotificationId":"bad-4","payload":{"visualContent":{"title":"T","bodyLocKey":"K","bodyLocArgs":["a\u0000"]}}}"#
            #expect(
                try await client.publish(nul, user: "alice").errorFields == ["payload.visualContent.bodyLocArgs[0]"])
        }
    }
}
