import Foundation
import HTTPTypes
import HubCore
import HubTesting
import Testing

/// `GET …/notifications/{id}/deliveries`: one row per endpoint of the user, through HTTP.
@Suite("Delivery receipts")
struct DeliveryReceiptsTests {
    @Test("a row per device: delivered with the provider's ID, retried then delivered, gone, polled, read")
    func receiptsAcrossDevices() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let devices = [("good", "tok-live"), ("flaky", "flaky"), ("gone", "dead")]
            for (id, token) in devices {
                try await client.registerRecording(id, token: token, bearer: alice)
            }
            let polled = try await client.send(
                .put, "/v1/apps/\(Harness.notes)/me/endpoints/browser", bearer: alice,
                json: #"{"platform":"web","appId":"https://notes.contoso.com","transport":"polling"}"#)
            #expect(polled.status == .created)
            let published = try await client.publish(
                notification("r1", extra: #","deliveryMode":"visible""#), user: "alice")
            #expect(published.status == .created)
            let id = try #require(published.object.string("id"))
            let path = "/v1/apps/\(Harness.notes)/users/alice/notifications/r1/deliveries"

            // Until the flaky device's second attempt is in and the dead one is recorded.
            let settled = await eventually {
                guard let response = try? await client.send(.get, path, bearer: Harness.notesKey) else { return false }
                let rows = Self.rows(response.object)
                return rows["flaky"]?.string("state") == "delivered" && rows["gone"]?.string("state") == "gone"
            }
            let response = try await client.send(.get, path, bearer: Harness.notesKey)
            #expect(response.status == .ok)
            let rows = Self.rows(response.object)
            #expect(settled, "receipts: \(response.text)")
            #expect(Set(rows.keys) == ["good", "flaky", "gone", "browser"])

            let good = try #require(rows["good"])
            #expect(good.string("state") == "delivered")
            #expect(good.string("kind") == "visible")
            #expect(good.string("platform") == "android")
            #expect(good.string("transport") == "recording")
            #expect(good["attempts"] as? Int == 1)
            #expect(good.string("lastOutcome") == "delivered")
            #expect(good.string("providerMessageId")?.hasPrefix("recording-") == true)
            for field in ["enqueuedDateTime", "sentDateTime", "acceptedDateTime"] {
                #expect(good.string(field) != nil, "\(field)")
            }

            let flaky = try #require(rows["flaky"])
            #expect(flaky["attempts"] as? Int == 2)
            #expect(flaky.string("providerMessageId")?.hasSuffix("-2") == true, "the second attempt's ID")

            let gone = try #require(rows["gone"])
            #expect(gone.string("reason") == "Unregistered")
            #expect(gone.string("lastOutcome") == "endpointGone")
            #expect(gone.string("endpointState") == "inactive")
            #expect(gone.string("acceptedDateTime") == nil)

            let browser = try #require(rows["browser"])
            #expect(browser.string("state") == "none")
            #expect(browser.string("note")?.contains("in process") == true)

            // The browser reads the notification: its row says so, the others do not.
            let read = try await client.send(
                .patch, "/v1/apps/\(Harness.notes)/me/notifications/\(id)", bearer: alice,
                json: #"{"readState":"read"}"#, headers: [.hubEndpoint: "browser"])
            #expect(read.status == .ok)
            let after = try await client.send(.get, path, bearer: Harness.adminToken)
            #expect(after.status == .ok, "the admin token reads receipts too")
            let afterRows = Self.rows(after.object)
            #expect(afterRows["browser"]?.string("readDateTime") != nil)
            #expect(afterRows["good"]?.string("readDateTime") == nil)
            #expect(after.object.string("notificationId") == id)
            #expect(!after.text.contains("tok-live"), "no push token in receipts")
        }
    }

    /// The rows of a receipts answer by endpoint.
    static func rows(_ object: [String: Any]) -> [String: [String: Any]] {
        Dictionary(
            object.objects("deliveries").map { ($0.string("endpointId") ?? "", $0) },
            uniquingKeysWith: { first, _ in first })
    }

    @Test("unknown notifications are 404; other apps' keys and user tokens are refused")
    func refusals() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            _ = try await client.publish(notification("r2"), user: "alice")
            let path = "/v1/apps/\(Harness.notes)/users/alice/notifications/r2/deliveries"
            #expect(try await client.send(.get, path, bearer: Harness.notesKey).status == .ok)
            #expect(try await client.send(.get, path, bearer: Harness.tasksKey).status == .unauthorized)
            #expect(try await client.send(.get, path, bearer: alice).status == .unauthorized)
            #expect(try await client.send(.get, path).status == .unauthorized)
            let missing = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/alice/notifications/nope/deliveries", bearer: Harness.notesKey)
            #expect(missing.status == .notFound)
            let otherUser = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/bob/notifications/r2/deliveries", bearer: Harness.notesKey)
            #expect(otherUser.status == .notFound)
        }
    }
}
