import Foundation
import HTTPTypes
import HubCore
import HubServer
import HummingbirdTesting
import Testing

@Suite("Device routes")
struct DeviceRoutesTests {
    static let pollingEndpoint = #"{"platform":"ios","appId":"com.contoso.notes","transport":"polling"}"#

    @Test("register answers 201, refresh 200; list, get and delete; the token is never echoed")
    func endpointLifecycle() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let uri = "/v1/apps/\(Harness.notes)/me/endpoints/phone-1"
            let created = try await client.send(.put, uri, bearer: alice, json: Self.pollingEndpoint)
            #expect(created.status == .created)
            #expect(created.object.string("id") == "phone-1")
            #expect(created.object.string("state") == "active")
            #expect(created.object.string("appId") == "com.contoso.notes")
            #expect(created.object.string("registeredDateTime") != nil)
            #expect(created.object["userId"] == nil)

            let refreshed = try await client.send(.put, uri, bearer: alice, json: Self.pollingEndpoint)
            #expect(refreshed.status == .ok)

            let push = try await client.send(
                .put, "/v1/apps/\(Harness.notes)/me/endpoints/pixel", bearer: alice,
                json:
                    #"{"platform":"android","appId":"com.contoso.notes","transport":"recording","token":"tok-secret-1"}"#
            )
            #expect(push.status == .created)
            #expect(!push.text.contains("tok-secret-1"))

            let list = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: alice)
            #expect(Set(list.object.objects("endpoints").compactMap { $0.string("id") }) == ["phone-1", "pixel"])
            #expect(!list.text.contains("tok-secret-1"))

            let one = try await client.send(.get, uri, bearer: alice)
            #expect(one.object.string("transport") == "polling")
            #expect(try await client.send(.delete, uri, bearer: alice).status == .noContent)
            #expect(try await client.send(.get, uri, bearer: alice).status == .notFound)
        }
    }

    @Test("an app without Web Push credentials answers 404 not-configured for its VAPID key; no token is a 401")
    func webPushKeyNotConfigured() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let uri = "/v1/apps/\(Harness.notes)/webpush"
            let missing = try await client.send(.get, uri, bearer: alice)
            #expect(missing.status == .notFound)
            #expect(missing.problemType == "not-configured")
            #expect(missing.object.string("detail")?.contains("credentials.webpush") == true, "\(missing.text)")
            #expect(try await client.send(.get, uri).status == .unauthorized)
        }
    }

    @Test("registration errors name their fields")
    func registrationValidation() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            let uri = "/v1/apps/\(Harness.notes)/me/endpoints/phone-1"
            let unknownApp = try await client.send(
                .put, uri, bearer: alice, json: #"{"platform":"ios","appId":"com.other.app","transport":"polling"}"#)
            #expect(unknownApp.status == .badRequest)
            #expect(unknownApp.errorFields == ["appId"])

            let types = try await client.send(.put, uri, bearer: alice, json: #"{"platform":5,"transport":"polling"}"#)
            #expect(types.status == .badRequest)
            #expect(Set(types.errorFields) == ["platform", "appId"])

            let wrongTransport = try await client.send(
                .put, uri, bearer: alice, json: #"{"platform":"ios","appId":"com.contoso.notes","transport":"fcm"}"#)
            #expect(wrongTransport.errorFields.contains("transport"))
        }
    }

    @Test("tokens with the wrong audience, issuer, app or time are refused")
    func tokenChecks() async throws {
        let harness = try await Harness()
        let uri = "/v1/apps/\(Harness.notes)/me/endpoints"
        let good = try await harness.token(user: "alice")
        let wrongAudience = try await harness.token(user: "alice", audience: "someone-else")
        let wrongIssuer = try await harness.token(user: "alice", issuer: "https://evil.example")
        let expired = try await harness.token(user: "alice", expiresIn: -120)
        let withinLeeway = try await harness.token(user: "alice", expiresIn: -20)
        let tasksToken = try await harness.token(app: Harness.tasks, user: "alice")
        try await harness.run { client in
            #expect(try await client.send(.get, uri, bearer: good).status == .ok)
            #expect(try await client.send(.get, uri, bearer: withinLeeway).status == .ok)
            for token in [wrongAudience, wrongIssuer, expired, tasksToken, "not-a-jwt", good + "x"] {
                let response = try await client.send(.get, uri, bearer: token)
                #expect(response.status == .unauthorized)
                #expect(response.problemType == "unauthorized")
                #expect(!response.text.contains(token))
            }
            #expect(try await client.send(.get, uri).status == .unauthorized)
            // HS256 tokens of app B's registration work on app B only.
            let tasks = try await client.send(.get, "/v1/apps/\(Harness.tasks)/me/endpoints", bearer: tasksToken)
            #expect(tasks.status == .ok)
        }
    }

    @Test("keys that cannot be loaded are reported at start and answer 503, not 401")
    func unloadableKeys() async throws {
        let broken = IdentityRegistration(
            issuer: "https://broken.contoso.com", audiences: [Harness.notesAudience],
            keys: .jwksFile(path: "/nonexistent/jwks.json"))
        let harness = try await Harness(extraIdentity: [broken])
        let error = try #require(harness.keyLoadingError)
        #expect(error.code == .notConfigured)
        #expect(
            error.message.contains("https://broken.contoso.com") && error.message.contains("/nonexistent/jwks.json"))
        let token = try await harness.token(user: "alice", issuer: "https://broken.contoso.com")
        let good = try await harness.token(user: "alice")
        try await harness.run { client in
            let refused = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: token)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.problemType == "unavailable")
            // The other registration of the app works all the same.
            #expect(try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: good).status == .ok)
        }
    }

    @Test("a user never sees or changes another user's notifications")
    func userIsolation() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let bob = try await harness.token(user: "bob")
        try await harness.run { client in
            let published = try await client.publish(notification("for-bob"), user: "bob")
            let id = try #require(published.object.string("id"))

            let aliceFeed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: alice)
            #expect(aliceFeed.status == .ok)
            #expect(aliceFeed.object.objects("changes").isEmpty)
            let bobFeed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: bob)
            #expect(bobFeed.object.objects("changes").count == 1)

            let read = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/notifications/\(id)", bearer: alice)
            #expect(read.status == .notFound)
            let patch = try await client.send(
                .patch, "/v1/apps/\(Harness.notes)/me/notifications/\(id)", bearer: alice,
                json: #"{"userActionState":"dismissed"}"#)
            #expect(patch.status == .notFound)

            // Bob's cursor does not open Alice's feed.
            let cursor = try #require(bobFeed.object.string("cursor"))
            let foreign = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/me/feed?cursor=\(cursor)", bearer: alice)
            #expect(foreign.status == .badRequest)
            #expect(foreign.problemType == "invalid-cursor")

            let history = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/notifications", bearer: bob)
            #expect(history.object.objects("notifications").compactMap { $0.string("id") } == [id])
        }
    }

    @Test("PATCH changes state and validates it")
    func patchState() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            _ = try await client.publish(notification("n1"), user: "alice")
            let uri = "/v1/apps/\(Harness.notes)/me/notifications/n1"
            let read = try await client.send(.patch, uri, bearer: alice, json: #"{"readState":"read"}"#)
            #expect(read.status == .ok)
            #expect(read.object.string("readState") == "read")
            let bogus = try await client.send(.patch, uri, bearer: alice, json: #"{"readState":"bogus"}"#)
            #expect(bogus.status == .badRequest)
            #expect(bogus.errorFields == ["readState"])
            let typed = try await client.send(.patch, uri, bearer: alice, json: #"{"readState":true}"#)
            #expect(typed.errorFields == ["readState"])
        }
    }
}
