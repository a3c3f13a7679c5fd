import Foundation
import HTTPTypes
import HubServer
import HummingbirdTesting
import Testing

@Suite("Publisher routes")
struct PublisherRoutesTests {
    @Test("publish answers 201 with the resource and Location; republishing answers 200")
    func publishThenRepublish() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let body = notification("order-1", extra: #","priority":"High","targetPolicy":{"platformTypes":["IOS"]}"#)
            let first = try await client.publish(body, user: "alice")
            #expect(first.status == .created)
            let created = first.object
            let id = try #require(created.string("id"))
            #expect(first.headers[.location] == "/v1/apps/notes.contoso.com/users/alice/notifications/\(id)")
            #expect(first.headers[.contentType]?.hasPrefix("application/json") == true)
            #expect(created.string("appNotificationId") == "order-1")
            #expect(created.string("priority") == "high")
            #expect(created.string("readState") == "unread")
            #expect(created.string("userActionState") == "noInteraction")
            #expect(created.string("status") == "active")
            #expect((created["targetPolicy"] as? [String: Any])?["platformTypes"] as? [String] == ["ios"])
            let visual = (created["payload"] as? [String: Any])?["visualContent"] as? [String: Any]
            #expect(visual?["title"] as? String == "Hello")
            let expiry = try #require(created.string("expirationDateTime"))
            #expect(expiry.hasSuffix("Z") && expiry.contains("."))

            let second = try await client.publish(notification("order-1", title: "Updated"), user: "alice")
            #expect(second.status == .ok)
            #expect(second.object.string("id") == id)
            #expect(second.headers[.location] == nil)
            let firstVersion = try #require(created["changeVersion"] as? Int)
            #expect(try #require(second.object["changeVersion"] as? Int) > firstVersion)
        }
    }

    @Test("a bad body is answered with one 400 listing every field error")
    func everyFieldError() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let body = """
                {"appNotificationId": 42, "priority": "urgent", "expirationDateTime": "tomorrow",
                 "payload": {"rawContent": "x"}, "fallbackPolicy": {"timeoutSeconds": 5},
                 "targetHostName": "tasks.fabrikam.com"}
                """
            let response = try await client.publish(body, user: "alice")
            #expect(response.status == .badRequest)
            #expect(response.headers[.contentType] == "application/problem+json")
            #expect(response.problemType == "invalid-request")
            #expect(
                response.errorFields.sorted()
                    == [
                        "appNotificationId", "expirationDateTime", "fallbackPolicy.timeoutSeconds", "priority",
                        "targetHostName",
                    ])

            let nested = try await client.publish(
                #"{"appNotificationId":"n","payload":{"visualContent":{"title":7}},"targetPolicy":{"platformTypes":["ios",3,"windows"]}}"#,
                user: "alice")
            #expect(nested.status == .badRequest)
            #expect(
                Set(nested.errorFields)
                    == [
                        "payload.visualContent.title", "targetPolicy.platformTypes[1]", "targetPolicy.platformTypes[2]",
                    ])

            let notJSON = try await client.publish("{not json", user: "alice")
            #expect(notJSON.status == .badRequest)
            #expect(notJSON.errorFields == ["body"])
        }
    }

    @Test("publishing needs a publisher key of the app in the path")
    func publisherAuthentication() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let missing = try await client.send(
                .post, "/v1/apps/\(Harness.notes)/users/alice/notifications", json: notification("a"))
            #expect(missing.status == .unauthorized)
            #expect(missing.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            #expect(missing.problemType == "unauthorized")

            let wrong = try await client.publish(notification("a"), user: "alice", key: "pk-notes-7b0e4c1d9b")
            #expect(wrong.status == .unauthorized)

            // The key of app B does not open app A, nor the other way round.
            let crossed = try await client.publish(notification("a"), user: "alice", key: Harness.tasksKey)
            #expect(crossed.status == .unauthorized)
            let crossedBack = try await client.publish(
                notification("a"), user: "alice", app: Harness.tasks, key: Harness.notesKey)
            #expect(crossedBack.status == .unauthorized)

            let history = try await client.send(.get, "/v1/apps/\(Harness.notes)/users/alice/notifications")
            #expect(history.status == .unauthorized)
            #expect(!missing.text.contains(Harness.notesKey) && !wrong.text.contains("pk-notes"))
        }
    }

    @Test("413 for a body over the server limit and for a payload over the hub limit; 415 for non-JSON")
    func sizeAndMediaType() async throws {
        let harness = try await Harness(maxPayloadBytes: 1024, maxBodyBytes: 4096)
        try await harness.run { client in
            let huge = String(repeating: "x", count: 5000)
            let tooLargeBody = try await client.publish(
                #"{"appNotificationId":"big","payload":{"rawContent":"\#(huge)"}}"#, user: "alice")
            #expect(tooLargeBody.status == .contentTooLarge)
            #expect(tooLargeBody.problemType == "body-too-large")

            let large = String(repeating: "y", count: 2000)
            let tooLargePayload = try await client.publish(
                #"{"appNotificationId":"big","payload":{"rawContent":"\#(large)"}}"#, user: "alice")
            #expect(tooLargePayload.status == .contentTooLarge)
            #expect(tooLargePayload.problemType == "payload-too-large")

            // Short text that escapes to more than the limit: 300 × \u0001 is 1,800 bytes of JSON.
            let escaped = String(repeating: #"\u0001"#, count: 300)
            let escapedPayload = try await client.publish(
                #"{"appNotificationId":"esc","payload":{"rawContent":"\#(escaped)"}}"#, user: "alice")
            #expect(escapedPayload.status == .contentTooLarge)
            #expect(escapedPayload.problemType == "payload-too-large")

            let form = try await client.send(
                .post, "/v1/apps/\(Harness.notes)/users/alice/notifications", bearer: Harness.notesKey,
                json: "appNotificationId=x", headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(form.status == .unsupportedMediaType)
            #expect(form.problemType == "unsupported-media-type")
        }
    }

    @Test("U+0000 in a payload's text is a 400 naming the field, on every store (PostgreSQL's jsonb cannot hold it)")
    func nulInPayload() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let cases = [
                #"{"appNotificationId":"n1","payload":{"rawContent":"a\u0000b"}}"#: "payload.rawContent",
                #"{"appNotificationId":"n2","payload":{"visualContent":{"title":"\u0000"}}}"#:
                    "payload.visualContent.title",
                #"{"appNotificationId":"n3","payload":{"visualContent":{"title":"t","body":"b\u0000"}}}"#:
                    "payload.visualContent.body",
            ]
            for (body, field) in cases {
                let response = try await client.publish(body, user: "alice")
                #expect(response.status == .badRequest, "\(field)")
                #expect(response.text.contains(field) && response.text.contains("U+0000"), "\(response.text)")
            }
            let fine = try await client.publish(
                #"{"appNotificationId":"n4","payload":{"rawContent":"a\u0001b"}}"#, user: "alice")
            #expect(fine.status == .created)
        }
    }

    @Test("a body that is not strict JSON is a 400 that says where: duplicate keys, trailing commas, bad escapes")
    func strictJSON() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let cases = [
                #"{"appNotificationId":"a","appNotificationId":"b","payload":{"rawContent":"x"}}"#: "duplicate key",
                #"{"appNotificationId":"a","payload":{"rawContent":"x"},}"#: "expected a key",
                #"{"appNotificationId":"a\ud800","payload":{"rawContent":"x"}}"#: "surrogate",
            ]
            for (body, reason) in cases {
                let response = try await client.publish(body, user: "alice")
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.problemType == "invalid-request")
                #expect(response.text.contains(reason), "\(response.text)")
            }
            #expect(try await client.publish(notification("ok"), user: "alice").status == .created)
        }
    }

    @Test("history, one notification and delete")
    func historyAndDelete() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let base = "/v1/apps/\(Harness.notes)/users/alice/notifications"
            _ = try await client.publish(notification("n1"), user: "alice")
            _ = try await client.publish(notification("n2"), user: "alice")
            let history = try await client.send(.get, base, bearer: Harness.notesKey)
            #expect(history.status == .ok)
            #expect(
                history.object.objects("notifications").compactMap { $0.string("appNotificationId") } == ["n2", "n1"])

            let one = try await client.send(.get, base + "/n1", bearer: Harness.notesKey)
            #expect(one.object.string("appNotificationId") == "n1")

            let deleted = try await client.send(.delete, base + "/n1", bearer: Harness.notesKey)
            #expect(deleted.status == .noContent)
            let active = try await client.send(.get, base, bearer: Harness.notesKey)
            #expect(active.object.objects("notifications").count == 1)
            let tombstones = try await client.send(.get, base + "?status=deleted", bearer: Harness.notesKey)
            #expect(tombstones.object.objects("notifications").compactMap { $0.string("status") } == ["deleted"])

            let again = try await client.send(.delete, base + "/nope", bearer: Harness.notesKey)
            #expect(again.status == .notFound)
            #expect(again.problemType == "not-found")
            let badFilter = try await client.send(.get, base + "?readState=maybe&limit=0", bearer: Harness.notesKey)
            #expect(badFilter.status == .badRequest)
            #expect(Set(badFilter.errorFields) == ["readState", "limit"])
        }
    }

    @Test(
        "an unknown app answers a publisher key as a known app answers another app's key (401); an unknown route is a problem+json 404"
    )
    func unknownAppAndRoute() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let app = try await client.publish(
                notification("x"), user: "alice", app: "nope.example.com", key: Harness.notesKey)
            let known = try await client.publish(
                notification("x"), user: "alice", app: Harness.tasks, key: Harness.notesKey)
            #expect(app.status == .unauthorized)
            #expect(app.problemType == "unauthorized")
            #expect(app.text.replacingOccurrences(of: "nope.example.com", with: Harness.tasks) == known.text)
            let route = try await client.send(.get, "/v2/whatever")
            #expect(route.status == .notFound)
            #expect(route.headers[.contentType] == "application/problem+json")
        }
    }
}
