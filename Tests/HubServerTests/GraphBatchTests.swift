import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /beta/$batch`: Graph's JSON batching, with Microsoft's own batching examples replayed
/// (`Fixtures/graph`, see its README), over real connections.
@Suite("Graph JSON batching")
struct GraphBatchTests {
    typealias Example = GraphFixtureTests.Example

    /// Sends `example`'s body to `/beta/$batch` with the publisher key, `{subscription-id}`
    /// replaced by `unsID`.
    static func replay(
        _ example: Example, unsID: String = "", on client: some TestClientProtocol
    ) async throws -> TestResponse {
        var headers = example.headers
        headers[.authorization] = "Bearer \(GraphFixtureTests.key)"
        let body = example.body.replacingOccurrences(of: "{subscription-id}", with: unsID)
        return try await client.execute(
            uri: "/beta/$batch", method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func responses(_ response: TestResponse) -> [[String: Any]] {
        response.object.objects("responses")
    }

    static func error(_ item: [String: Any]) -> [String: Any] {
        (item["body"] as? [String: Any])?["error"] as? [String: Any] ?? [:]
    }

    @Test("the batching page's example: every request gets the error Graph gives a resource the hub does not serve")
    func pageExample() async throws {
        let harness = try await GraphFixtureTests.harness(clock: ManualClock(date: GraphFixtureTests.start))
        let example = try Example("json-batching-example.http")
        #expect(example.path == "/v1.0/$batch")
        try await harness.run(.live) { client in
            let response = try await Self.replay(example, on: client)
            #expect(response.status == .ok, "\(response.text)")
            let items = Self.responses(response)
            #expect(items.map { $0.string("id") } == ["1", "2", "3", "4", "5"])
            #expect(items.map { $0["status"] as? Int } == [400, 400, 400, 400, 400])
            #expect(items.map { Self.error($0).string("code") } == Array(repeating: "BadRequest", count: 5))
            #expect(
                items.map { Self.error($0).string("message") } == [
                    "Resource not found for the segment 'memberOf'.", "Resource not found for the segment 'planner'.",
                    "Resource not found for the segment 'groups'.", "Resource not found for the segment 'users'.",
                    "Resource not found for the segment 'users'.",
                ])
            #expect(items.allSatisfy { ($0["headers"] as? [String: String])?["Content-Type"] == "application/json" })
        }
    }

    @Test("the page's dependsOn example runs 1, 2, 4, 3: the first fails, and each one after it gets 424")
    func dependsOnExample() async throws {
        let harness = try await GraphFixtureTests.harness(clock: ManualClock(date: GraphFixtureTests.start))
        let example = try Example("json-batching-dependson.http")
        try await harness.run(.live) { client in
            let response = try await Self.replay(example, on: client)
            #expect(response.status == .ok, "\(response.text)")
            let items = Self.responses(response)
            #expect(items.map { $0.string("id") } == ["1", "2", "4", "3"])
            #expect(items.map { $0["status"] as? Int } == [400, 424, 424, 424])
            #expect(Self.error(items[1]).string("code") == "FailedDependency")
            #expect(Self.error(items[1]).string("message")?.contains("'1'") == true)
            #expect(Self.error(items[3]).string("message")?.contains("'4'") == true)
        }
    }

    @Test(
        "publishes in a batch: created, an update after it, an invalid one naming its field, 424 after it, 405 for GET")
    func notificationsBatch() async throws {
        let harness = try await GraphFixtureTests.harness(clock: ManualClock(date: GraphFixtureTests.start))
        let example = try Example("notifications-batch.http")
        try await harness.run(.live) { client in
            let unsID = try await GraphFixtureTests.subscription(harness, user: "graphnotify", on: client)
            let response = try await Self.replay(example, unsID: unsID, on: client)
            #expect(response.status == .ok, "\(response.text)")
            let items = Self.responses(response)
            #expect(items.map { $0.string("id") } == ["send", "update", "invalid", "after-invalid", "list"])
            #expect(items.map { $0["status"] as? Int } == [201, 200, 400, 424, 405], "\(response.text)")
            let sent = items[0]["body"] as? [String: Any]
            #expect(sent?.string("@odata.context") == "/beta/$metadata#users('graphnotify')/notifications/$entity")
            #expect(sent?.string("appNotificationId") == "testDirectToastNotification")
            #expect(sent?.string("priority") == "High")
            #expect((items[0]["headers"] as? [String: String])?["Location"]?.hasPrefix("/v1/apps/") == true)
            let updated = items[1]["body"] as? [String: Any]
            #expect(updated?.string("id") == sent?.string("id"), "the update depends on the send and updates it")
            #expect(
                ((updated?["payload"] as? [String: Any])?["visualContent"] as? [String: Any])?.string("title")
                    == "Hello again!")
            let invalid = Self.error(items[2])
            #expect(invalid.string("code") == "BadRequest")
            #expect(invalid.objects("details").compactMap { $0.string("target") } == ["priority"])
            #expect(Self.error(items[3]).string("code") == "FailedDependency")
            #expect(Self.error(items[4]).string("code") == "MethodNotAllowed")

            let stored = try await harness.hub.history(
                app: GraphFixtureTests.host, user: "graphnotify", filter: HistoryFilter(status: nil))
            #expect(
                stored.map(\.appNotificationId) == ["testDirectToastNotification"], "only the good publish is stored")
            #expect(stored.first?.payload.visualContent?.title == "Hello again!")
        }
    }

    @Test("a malformed batch gets 400 and runs nothing: over 20, a repeated ID, an unknown dependency, a cycle")
    func malformed() async throws {
        let harness = try await GraphFixtureTests.harness(clock: ManualClock(date: GraphFixtureTests.start))
        try await harness.run(.live) { client in
            let unsID = try await GraphFixtureTests.subscription(harness, user: "graphnotify", on: client)
            func publish(_ id: String, dependsOn: [String] = []) -> String {
                let depends =
                    dependsOn.isEmpty ? "" : #","dependsOn":[\#(dependsOn.map { "\"\($0)\"" }.joined(separator: ","))]"#
                return
                    #"{"id":"\#(id)","method":"POST","url":"/me/notifications","headers":{"Content-Type":"application/json","X-UNS-ID":"\#(unsID)"},"body":{"appNotificationId":"n-\#(id)","expirationDateTime":"2019-10-30T23:59:00Z","payload":{"rawContent":"x"}}\#(depends)}"#
            }
            func send(_ requests: [String]) async throws -> TestResponse {
                try await client.send(
                    .post, "/beta/$batch", bearer: GraphFixtureTests.key,
                    json: #"{"requests":[\#(requests.joined(separator: ","))]}"#)
            }
            let tooMany = try await send((1...21).map { publish("\($0)") })
            #expect(tooMany.status == .badRequest)
            #expect(tooMany.object.string("detail")?.contains("1 to 20") == true, "\(tooMany.text)")
            let repeated = try await send([publish("a"), publish("A")])
            #expect(repeated.status == .badRequest)
            #expect(repeated.errorFields == ["requests[1].id"])
            let unknown = try await send([publish("a", dependsOn: ["zz"])])
            #expect(unknown.errorFields == ["requests[0].dependsOn[0]"])
            let cycle = try await send([publish("a", dependsOn: ["b"]), publish("b", dependsOn: ["a"])])
            #expect(cycle.status == .badRequest)
            #expect(cycle.object.string("detail")?.contains("cycle") == true)
            let stored = try await harness.hub.history(
                app: GraphFixtureTests.host, user: "graphnotify", filter: HistoryFilter(status: nil))
            #expect(stored.isEmpty, "nothing of a malformed batch ran")

            let twenty = try await send((1...20).map { publish("\($0)") })
            #expect(Self.responses(twenty).map { $0["status"] as? Int } == Array(repeating: 201, count: 20))
            // Per request: no Content-Type with a body, an X-UNS-ID this hub did not issue, none at all.
            let body =
                #"{"appNotificationId":"p","expirationDateTime":"2019-10-30T23:59:00Z","payload":{"rawContent":"x"}}"#
            let perRequest = try await send([
                #"{"id":"1","method":"POST","url":"/me/notifications","headers":{"X-UNS-ID":"\#(unsID)"},"body":\#(body)}"#,
                #"{"id":"2","method":"POST","url":"/me/notifications","headers":{"Content-Type":"application/json","X-UNS-ID":"forged"},"body":\#(body)}"#,
                #"{"id":"3","method":"POST","url":"/me/notifications","headers":{"Content-Type":"application/json"},"body":\#(body)}"#,
            ])
            let items = Self.responses(perRequest)
            #expect(items.map { $0["status"] as? Int } == [400, 400, 400], "\(perRequest.text)")
            #expect(
                Self.error(items[0]).objects("details").compactMap { $0.string("target") } == ["headers.Content-Type"])
            #expect(Self.error(items[1]).string("message")?.contains("not issued by this hub") == true)
            #expect(Self.error(items[2]).objects("details").compactMap { $0.string("target") } == ["X-UNS-ID"])

            let unauthorized = try await client.send(
                .post, "/beta/$batch", bearer: "pk-wrong", json: #"{"requests":[\#(publish("x"))]}"#)
            #expect(unauthorized.status == .unauthorized)
        }
    }
}
