import Foundation
import HTTPTypes
import HubCore
import HubTesting
import Testing

/// `GET /v1/apps/{app}/users/{userId}/export` and `DELETE /v1/apps/{app}/users/{userId}`, through
/// HTTP over a real connection.
@Suite("User export and erasure routes")
struct UserDataRoutesTests {
    static let phoneToken = "push-token-for-alice-phone-abc123"

    @Test("the export round-trips what the API shows about the user; the erasure taps, then leaves nothing")
    func exportThenErase() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let bob = try await harness.token(user: "bob")
        try await harness.run(.live) { client in
            let notes = Harness.notes
            try await client.registerRecording("phone", token: Self.phoneToken, bearer: alice)
            try await client.registerRecording("tablet", token: "push-token-tablet-zz9876", bearer: alice)
            let browser = try await client.send(
                .put, "/v1/apps/\(notes)/me/endpoints/browser", bearer: alice,
                json: #"{"platform":"web","appId":"https://notes.contoso.com","transport":"polling"}"#)
            #expect(browser.status == .created)
            try await client.registerRecording("bob-phone", token: "bob-token-000111", bearer: bob)
            let kept = try await client.publish(
                notification("kept", title: "Private title", extra: #","deliveryMode":"visible""#), user: "alice")
            let keptId = try #require(kept.object.string("id"))
            _ = try await client.publish(notification("gone"), user: "alice")
            #expect(
                try await client.send(
                    .delete, "/v1/apps/\(notes)/users/alice/notifications/gone", bearer: Harness.notesKey
                ).status == .noContent)
            _ = try await client.publish(notification("bobs"), user: "bob")
            let read = try await client.send(
                .patch, "/v1/apps/\(notes)/me/notifications/\(keptId)", bearer: alice,
                json: #"{"readState":"read"}"#, headers: [.hubEndpoint: "browser"])
            #expect(read.status == .ok)
            let tags = try await client.send(
                .put, "/v1/apps/\(notes)/users/alice/tags", bearer: Harness.notesKey, json: #"{"tags":["plan:pro"]}"#)
            #expect(tags.status == .ok)
            let user = "/v1/apps/\(notes)/users/alice"
            // Until every delivery has its outcome, so the reads below see one state.
            #expect(
                await eventually {
                    guard let export = try? await client.send(.get, "\(user)/export", bearer: Harness.notesKey)
                    else { return false }
                    let deliveries = export.object.objects("deliveries")
                    return deliveries.count >= 4
                        && deliveries.allSatisfy { ["delivered", "superseded"].contains($0.string("state") ?? "") }
                })

            let export = try await client.send(.get, "\(user)/export", bearer: Harness.notesKey)
            #expect(export.status == .ok, "\(export.text)")
            let document = export.object
            #expect(document.string("userId") == "alice")

            // Notifications: as the history shows them (tombstones too), each with its receipts.
            let history = try await client.send(.get, "\(user)/notifications?status=all", bearer: Harness.notesKey)
            let exported = document.objects("notifications")
            #expect(exported.count == 2)
            #expect(Self.same(exported.map { $0["notification"] ?? [:] }, history.object["notifications"] ?? []))
            for entry in exported {
                let id = try #require((entry["notification"] as? [String: Any])?.string("id"))
                let receipts = try await client.send(
                    .get, "\(user)/notifications/\(id)/deliveries", bearer: Harness.notesKey)
                #expect(Self.same(entry["deliveries"] ?? [:], receipts.object), "receipts of \(id)")
            }
            // The feed and the state a device sees.
            let feed = try await client.send(.get, "/v1/apps/\(notes)/me/feed", bearer: alice)
            let byId = Dictionary(
                uniqueKeysWithValues: exported.compactMap { $0["notification"] as? [String: Any] }.map {
                    ($0.string("id") ?? "", $0)
                })
            let changes = feed.object.objects("changes")
            #expect(changes.count == 2)
            for change in changes {
                #expect(Self.same(change, byId[change.string("id") ?? ""] ?? [:]), "feed item \(change)")
            }
            #expect(byId[keptId]?.string("readState") == "read")
            // Endpoints: as the admin's list shows them, tokens masked to their last 6 characters.
            let endpoints = try await client.send(.get, "\(user)/endpoints", bearer: Harness.adminToken)
            let listed = endpoints.object.objects("endpoints")
            let exportedEndpoints = document.objects("endpoints")
            #expect(
                Self.same(
                    exportedEndpoints.map { $0.filter { $0.key != "token" && $0.key != "attributes" } },
                    listed))
            #expect(exportedEndpoints.first { $0.string("id") == "phone" }?.string("token") == "…abc123")
            #expect(!export.text.contains(Self.phoneToken), "no whole push token")
            // Tags and every delivery.
            let tagList = try await client.send(.get, "\(user)/tags", bearer: Harness.notesKey)
            #expect(Self.same(document["tags"] ?? [], tagList.object["tags"] ?? []))
            let deliveryIds = Set(document.objects("deliveries").compactMap { $0["deliveryId"] as? Int })
            for entry in exported {
                for receipt in (entry["deliveries"] as? [String: Any])?.objects("deliveries") ?? [] {
                    if let id = receipt["deliveryId"] as? Int { #expect(deliveryIds.contains(id), "delivery \(id)") }
                }
            }
            #expect(!document.objects("deliveries").contains { $0["endpointId"] as? String == "bob-phone" })

            // Only the app's publisher key or the admin token.
            #expect(try await client.send(.get, "\(user)/export", bearer: Harness.tasksKey).status == .unauthorized)
            #expect(try await client.send(.delete, user, bearer: alice).status == .unauthorized)

            harness.custom.reset()
            let erase = try await client.send(.delete, user, bearer: Harness.adminToken)
            #expect(erase.status == .ok, "\(erase.text)")
            let erased = try #require(erase.object["erased"] as? [String: Any])
            #expect(erased["notifications"] as? Int == 2)
            #expect(erased["endpoints"] as? Int == 3)
            #expect(erased["tags"] as? Int == 1)
            #expect(erased["deliveries"] as? Int == deliveryIds.count)
            #expect((erase.object["devices"] as? [String: Any])?["tapped"] as? Int == 2)
            let taps = harness.custom.deliveries.filter { $0.delivery.changeVersion == UserErasure.tapVersion }
            #expect(Set(taps.map(\.endpoint.id)) == ["phone", "tablet"], "alice's push devices, not bob's")
            #expect(taps.allSatisfy { $0.kind == .shoulderTap && $0.notification == nil }, "content-free")

            let after = try await client.send(.get, "\(user)/export", bearer: Harness.notesKey)
            #expect(after.status == .ok)
            for list in ["notifications", "endpoints", "tags", "deliveries", "broadcasts"] {
                #expect((after.object[list] as? [Any])?.isEmpty == true, "\(list) after the erasure")
            }
            let bobs = try await client.send(
                .get, "/v1/apps/\(notes)/users/bob/notifications", bearer: Harness.notesKey)
            #expect(bobs.object.objects("notifications").count == 1, "bob's data stays")
            let again = try await client.send(.delete, user, bearer: Harness.notesKey)
            #expect(again.status == .ok)
            #expect((again.object["erased"] as? [String: Any])?["notifications"] as? Int == 0, "idempotent")
        }
    }

    /// Whether two JSON values are equal (objects compared with sorted keys).
    static func same(_ a: Any, _ b: Any) -> Bool {
        guard let left = try? JSONSerialization.data(withJSONObject: a, options: [.sortedKeys, .fragmentsAllowed]),
            let right = try? JSONSerialization.data(withJSONObject: b, options: [.sortedKeys, .fragmentsAllowed])
        else { return false }
        return left == right
    }
}
