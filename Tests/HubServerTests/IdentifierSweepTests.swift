import Crypto
import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import NIOCore
import Testing

@testable import HubServer

/// Sweeps every route that takes an identifier with values the ``Identifier`` grammar refuses:
/// each answer must be a 400 problem naming the field (401 for a token's user claim), and no
/// such request may read, change or delete anything in the store.
@Suite("Identifier sweep")
struct IdentifierSweepTests {
    /// Bad path segments, as sent (percent-encoded where a raw byte could not be).
    static let badSegments: [(label: String, encoded: String)] = [
        ("NUL", "bob%00evil"), ("CR LF", "bob%0D%0Aevil"), ("TAB", "bob%09evil"), ("DEL", "bob%7F"),
        ("C1 NEL", "bob%C2%85"), ("bidi override", "bob%E2%80%AElive"), ("invalid UTF-8", "bob%ff"),
        ("bad escape", "bob%zz"), ("lone percent", "bob%"), ("257 bytes", String(repeating: "b", count: 257)),
    ]

    /// Bad string values of a JSON body, as JSON string literals.
    static let badStrings: [(label: String, json: String)] = [
        ("NUL", #""n1\u0000evil""#), ("CR LF", #""n1\r\nevil""#), ("TAB", #""n1\tevil""#), ("DEL", #""n1\u007f""#),
        ("C1 NEL", #""n1\u0085""#), ("bidi override", #""n1\u202eevil""#), ("bidi isolate", #""n1\u2066""#),
        ("257 bytes", "\"\(String(repeating: "n", count: 257))\""),
    ]

    /// Bad `sub` claims of a user token.
    static let badSubjects: [(label: String, value: String)] = [
        ("NUL", "bob\u{0}evil"), ("CR LF", "bob\r\nevil"), ("TAB", "bob\tevil"), ("DEL", "bob\u{7F}"),
        ("C1 NEL", "bob\u{85}"), ("bidi override", "bob\u{202E}live"), ("empty", ""),
        ("257 bytes", String(repeating: "b", count: 257)),
    ]

    /// One route with a `{field}` placeholder in its path.
    struct Route: Sendable, CustomStringConvertible {
        enum Caller: Sendable { case publisher, device, admin }
        var method: HTTPRequest.Method
        var path: String
        var caller: Caller
        var body: String?
        var description: String { "\(method.rawValue) \(path)" }

        /// The path with `field` replaced by `value` and every other placeholder by a valid value.
        func path(_ field: String, _ value: String) -> String {
            let valid = ["app": Harness.notes, "userId": "bob", "id": "n1", "endpointId": "e1"]
            var path = path
            for (name, good) in valid {
                path = path.replacingOccurrences(of: "{\(name)}", with: name == field ? value : good)
            }
            return path
        }

        var fields: [String] {
            ["app", "userId", "id", "endpointId"].filter { path.contains("{\($0)}") }
        }
    }

    static let publish = #"{"appNotificationId":"n9","payload":{"rawContent":"x"}}"#
    static let register = #"{"platform":"ios","appId":"com.contoso.notes","transport":"recording","token":"t-bob-2"}"#

    static let routes: [Route] = [
        Route(method: .post, path: "/v1/apps/{app}/users/{userId}/notifications", caller: .publisher, body: publish),
        Route(method: .get, path: "/v1/apps/{app}/users/{userId}/notifications", caller: .publisher),
        Route(method: .get, path: "/v1/apps/{app}/users/{userId}/notifications/{id}", caller: .publisher),
        Route(method: .delete, path: "/v1/apps/{app}/users/{userId}/notifications/{id}", caller: .publisher),
        Route(method: .put, path: "/v1/apps/{app}/me/endpoints/{endpointId}", caller: .device, body: register),
        Route(method: .get, path: "/v1/apps/{app}/me/endpoints", caller: .device),
        Route(method: .get, path: "/v1/apps/{app}/me/endpoints/{endpointId}", caller: .device),
        Route(method: .delete, path: "/v1/apps/{app}/me/endpoints/{endpointId}", caller: .device),
        Route(method: .get, path: "/v1/apps/{app}/me/feed", caller: .device),
        Route(method: .get, path: "/v1/apps/{app}/me/notifications", caller: .device),
        Route(method: .get, path: "/v1/apps/{app}/me/notifications/{id}", caller: .device),
        Route(
            method: .patch, path: "/v1/apps/{app}/me/notifications/{id}", caller: .device,
            body: #"{"readState":"read"}"#),
        Route(method: .post, path: "/v1/apps/{app}/me/subscription", caller: .device),
        Route(method: .get, path: "/v1/apps/{app}/endpoints", caller: .admin),
        Route(method: .get, path: "/v1/apps/{app}/users/{userId}/endpoints", caller: .admin),
        Route(method: .get, path: "/v1/apps/{app}/statistics", caller: .admin),
    ]

    /// The store methods a refused request must never reach.
    static let feedAndEndpointCalls = [
        "publish", "delete", "updateState", "notification", "history", "feed", "upsertEndpoint", "endpoint",
        "endpoints", "deleteEndpoint", "touchEndpoint",
    ]

    /// Bob's data before a sweep: one notification and one endpoint.
    struct Fixture {
        let plug: StorePlug
        let harness: Harness
        let bob: String

        init() async throws {
            plug = StorePlug()
            harness = try await Harness(plug: plug)
            bob = try await harness.token(user: "bob")
        }

        func bearer(_ caller: Route.Caller) -> String {
            switch caller {
            case .publisher: Harness.notesKey
            case .device: bob
            case .admin: Harness.adminToken
            }
        }

        func storeCalls() -> Int { IdentifierSweepTests.feedAndEndpointCalls.map(plug.calls).reduce(0, +) }

        /// Publishes bob's `n1` and registers his `e1`; returns the store's change version.
        func seed(_ client: some TestClientProtocol) async throws -> Int64 {
            let published = try await client.publish(notification("n1"), user: "bob")
            #expect(published.status == .created)
            let registered = try await client.send(
                .put, "/v1/apps/\(Harness.notes)/me/endpoints/e1", bearer: bob,
                json: #"{"platform":"ios","appId":"com.contoso.notes","transport":"recording","token":"t-bob"}"#)
            #expect(registered.status == .created)
            return try #require(published.object["changeVersion"] as? Int).int64
        }

        /// Bob's notification and endpoint are as seeded, and no change took a version since `version`.
        func expectUntouched(_ client: some TestClientProtocol, since version: Int64) async throws {
            let history = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/bob/notifications?status=all", bearer: Harness.notesKey)
            let items = history.object.objects("notifications")
            #expect(items.compactMap { $0.string("appNotificationId") } == ["n1"])
            #expect(items.first?.string("status") == "active")
            #expect(items.first?.string("readState") == "unread")
            let endpoints = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/endpoints", bearer: Harness.adminToken)
            #expect(endpoints.object.objects("endpoints").compactMap { $0.string("id") } == ["e1"])
            // The change counter is store-wide: a sentinel publish takes the very next version.
            let sentinel = try await client.publish(notification("sentinel"), user: "carol")
            #expect((sentinel.object["changeVersion"] as? Int).map(Int64.init) == version + 1)
        }
    }

    @Test("every route answers a refused path segment with 400 naming the field, before the store")
    func pathSegments() async throws {
        let fixture = try await Fixture()
        try await fixture.harness.run { client in
            let version = try await fixture.seed(client)
            let before = fixture.storeCalls()
            var checked = 0
            for route in Self.routes {
                for field in route.fields {
                    for (label, value) in Self.badSegments {
                        let response = try await client.send(
                            route.method, route.path(field, value), bearer: fixture.bearer(route.caller),
                            json: route.body)
                        let what = "\(route) with \(field) = \(label)"
                        #expect(response.status == .badRequest, "\(what): \(response.status) \(response.text)")
                        #expect(response.headers[.contentType] == "application/problem+json", "\(what)")
                        #expect(response.errorFields == [field], "\(what): \(response.text)")
                        #expect(!response.text.contains("evil"), "\(what): the value is echoed")
                        checked += 1
                    }
                }
            }
            #expect(checked >= 200)
            #expect(fixture.storeCalls() == before, "a refused request reached the store")
            try await fixture.expectUntouched(client, since: version)
        }
    }

    @Test("publish bodies: a refused appNotificationId or groupName gets 400 naming it, also through Graph")
    func bodyFields() async throws {
        let fixture = try await Fixture()
        try await fixture.harness.run { client in
            let version = try await fixture.seed(client)
            let subscription = try await client.send(
                .post, "/v1/apps/\(Harness.notes)/me/subscription", bearer: fixture.bob)
            let unsID = try #require(subscription.object.string("id"))
            let before = fixture.storeCalls()
            for (label, json) in Self.badStrings {
                for field in ["appNotificationId", "groupName"] {
                    let body =
                        field == "appNotificationId"
                        ? #"{"appNotificationId":\#(json),"payload":{"rawContent":"x"}}"#
                        : #"{"appNotificationId":"n1","groupName":\#(json),"payload":{"rawContent":"x"}}"#
                    for graph in [false, true] {
                        let response =
                            graph
                            ? try await client.send(
                                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: body,
                                headers: [.unsID: unsID])
                            : try await client.send(
                                .post, "/v1/apps/\(Harness.notes)/users/bob/notifications", bearer: Harness.notesKey,
                                json: body)
                        let what = "\(graph ? "Graph" : "v1") publish with \(field) = \(label)"
                        #expect(response.status == .badRequest, "\(what): \(response.text)")
                        #expect(response.errorFields == [field], "\(what): \(response.text)")
                    }
                }
            }
            // Raw bytes that are not UTF-8 make the body itself invalid.
            var bytes = Array(#"{"appNotificationId":"n1"#.utf8)
            bytes += [0xFF, 0x22, 0x7D]
            let invalid = try await client.execute(
                uri: "/v1/apps/\(Harness.notes)/users/bob/notifications", method: .post,
                headers: [.authorization: "Bearer \(Harness.notesKey)", .contentType: "application/json"],
                body: ByteBuffer(bytes: bytes))
            #expect(invalid.status == .badRequest)
            #expect(invalid.errorFields == ["body"])
            #expect(fixture.storeCalls() == before, "a refused publish reached the store")
            try await fixture.expectUntouched(client, since: version)
        }
    }

    @Test("a user token whose sub the grammar refuses gets 401 on every device route")
    func tokenSubjects() async throws {
        let fixture = try await Fixture()
        try await fixture.harness.run { client in
            let version = try await fixture.seed(client)
            let before = fixture.storeCalls()
            var tokens = [(String, String)]()
            for (label, value) in Self.badSubjects {
                tokens.append((label, try await fixture.harness.token(user: value)))
            }
            tokens.append(("invalid UTF-8", Self.hs256Token(subjectBytes: Array("bob".utf8) + [0xFF])))
            tokens.append(("invalid UTF-8 (other byte)", Self.hs256Token(subjectBytes: Array("bob".utf8) + [0xFE])))
            for route in Self.routes where route.caller == .device {
                for (label, token) in tokens {
                    let app = label.hasPrefix("invalid UTF-8") ? Harness.tasks : Harness.notes
                    let path = route.path("app", app)
                    let response = try await client.send(route.method, path, bearer: token, json: route.body)
                    #expect(response.status == .unauthorized, "\(route) with sub = \(label): \(response.text)")
                    #expect(response.problemType == "unauthorized")
                }
            }
            #expect(fixture.storeCalls() == before, "a refused token reached the store")
            try await fixture.expectUntouched(client, since: version)
        }
    }

    @Test("the reported aliases: bob%00evil deletes nothing of bob's; appNotificationIds differing after a NUL")
    func reportedAliases() async throws {
        let fixture = try await Fixture()
        try await fixture.harness.run { client in
            let version = try await fixture.seed(client)
            let deleted = try await client.send(
                .delete, "/v1/apps/\(Harness.notes)/users/bob%00evil/notifications/n1", bearer: Harness.notesKey)
            #expect(deleted.status == .badRequest)
            #expect(deleted.errorFields == ["userId"])
            for id in [#"a\u0000x"#, #"a\u0000y"#] {
                let published = try await client.send(
                    .post, "/v1/apps/\(Harness.notes)/users/bob/notifications", bearer: Harness.notesKey,
                    json: #"{"appNotificationId":"\#(id)","payload":{"rawContent":"x"}}"#)
                #expect(published.status == .badRequest)
                #expect(published.errorFields == ["appNotificationId"])
            }
            let evil = try await fixture.harness.token(user: "bob\u{0}evil")
            let listed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/notifications", bearer: evil)
            #expect(listed.status == .unauthorized)
            #expect(listed.object.objects("notifications").isEmpty)
            try await fixture.expectUntouched(client, since: version)
        }
    }

    @Test("an X-UNS-ID naming a user the grammar refuses (minted before the grammar) is refused")
    func subscriptionWithRefusedUser() async throws {
        let fixture = try await Fixture()
        let codec = TokenCodec(key: fixture.harness.configuration.cursorKey)
        try await fixture.harness.run { client in
            let version = try await fixture.seed(client)
            let id = codec.subscriptionID(
                .init(app: Harness.notes, user: "bob\u{0}evil", expiration: Date().addingTimeInterval(600)))
            let response = try await client.send(
                .post, "/beta/me/notifications", bearer: Harness.notesKey, json: notification("n1"),
                headers: [.unsID: id])
            #expect(response.status == .badRequest)
            #expect(response.problemType == "invalid-subscription")
            try await fixture.expectUntouched(client, since: version)
        }
    }

    /// An HS256 token of the tasks app whose `sub` is the given bytes, valid UTF-8 or not.
    static func hs256Token(subjectBytes: [UInt8]) -> String {
        let header = Array(#"{"alg":"HS256","typ":"JWT","kid":"tasks"}"#.utf8)
        let expiry = Int(Date().timeIntervalSince1970) + 600
        let claims =
            Array(#"{"iss":"\#(Harness.tasksIssuer)","aud":"\#(Harness.tasksAudience)","exp":\#(expiry),"sub":""#.utf8)
            + subjectBytes + Array(#""}"#.utf8)
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(input.utf8), using: SymmetricKey(data: Array(Harness.tasksSecret.utf8)))
        return input + "." + Base64URL.encode(Array(mac))
    }
}

extension Int {
    fileprivate var int64: Int64 { Int64(self) }
}
