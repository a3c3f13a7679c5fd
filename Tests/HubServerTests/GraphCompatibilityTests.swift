import Foundation
import HTTPTypes
import HubServer
import HummingbirdTesting
import Testing

@Suite("Graph compatibility")
struct GraphCompatibilityTests {
    @Test("POST /beta/me/notifications with the device's X-UNS-ID publishes for that user")
    func publishWithSubscriptionID() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let subscription = try await client.send(.post, "/v1/apps/\(Harness.notes)/me/subscription", bearer: alice)
            #expect(subscription.status == .ok)
            let unsID = try #require(subscription.object.string("id"))
            #expect(subscription.object.string("expirationDateTime") != nil)

            let published = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("graph-1"),
                headers: [.unsID: unsID])
            #expect(published.status == .created)
            #expect(published.headers[.location]?.hasPrefix("/v1/apps/notes.contoso.com/users/alice/") == true)

            let feed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: alice)
            #expect(feed.object.objects("changes").compactMap { $0.string("appNotificationId") } == ["graph-1"])

            let again = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("graph-1"),
                headers: [.unsID: unsID])
            #expect(again.status == .ok)
        }
    }

    @Test("a tampered, missing or foreign X-UNS-ID is refused")
    func refusedSubscriptionIDs() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let subscription = try await client.send(.post, "/v1/apps/\(Harness.notes)/me/subscription", bearer: alice)
            let unsID = try #require(subscription.object.string("id"))
            var characters = Array(unsID)
            characters[12] = characters[12] == "A" ? "B" : "A"
            for bad in [String(characters), "bm90LWEtc3Vic2NyaXB0aW9u"] {
                let response = try await client.send(
                    .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("g"),
                    headers: [.unsID: bad])
                #expect(response.status == .badRequest)
                #expect(response.problemType == "invalid-subscription")
            }
            let missing = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("g"))
            #expect(missing.errorFields == ["X-UNS-ID"])
            // The publisher key must belong to the subscription's app.
            let foreign = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.tasksKey, json: notification("g"),
                headers: [.unsID: unsID])
            #expect(foreign.status == .unauthorized)
            let history = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/notifications", bearer: alice)
            #expect(history.object.objects("notifications").isEmpty)
        }
    }

    @Test("an expired X-UNS-ID is refused, saying so")
    func expiredSubscriptionID() async throws {
        let harness = try await Harness(subscriptionLifetime: .zero)
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let subscription = try await client.send(.post, "/v1/apps/\(Harness.notes)/me/subscription", bearer: alice)
            let unsID = try #require(subscription.object.string("id"))
            let response = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("g"),
                headers: [.unsID: unsID])
            #expect(response.status == .badRequest)
            #expect(response.problemType == "invalid-subscription")
            #expect(response.object.string("detail")?.contains("expired") == true)
        }
    }
}

extension HTTPField.Name {
    static let unsID = HTTPField.Name("X-UNS-ID")!
}
