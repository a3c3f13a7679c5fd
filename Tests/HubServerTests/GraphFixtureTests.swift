import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// Microsoft's own Graph request examples (`Fixtures/graph`, see its README), replayed as they are
/// against `POST /beta/me/notifications`.
@Suite("Graph request examples, replayed")
struct GraphFixtureTests {
    static let host = "graphnotifications.sample.windows.com"
    static let key = "pk-graph-3c9e71d0b4"
    /// The time of the response Microsoft's page shows, so the example's expiration is ahead.
    static let start = Date(timeIntervalSince1970: 1_572_300_336)

    /// A request of a fixture file: its request line, headers and body as the page shows them.
    struct Example {
        var path: String
        var headers: HTTPFields
        var body: String

        init(_ name: String) throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Fixtures/graph/\(name)")
            let text = try String(contentsOf: url, encoding: .utf8)
            let parts = text.components(separatedBy: "\n\n")
            let head = parts[0].split(separator: "\n")
            let target = try #require(head.first?.split(separator: " ").last)
            path = try #require(URL(string: String(target))?.path)
            if target.hasSuffix("/") { path += "/" }
            headers = [:]
            for line in head.dropFirst() {
                let (name, value) = try #require(
                    line.firstIndex(of: ":").map { (line[..<$0], line[line.index(after: $0)...]) })
                headers[try #require(HTTPField.Name(String(name)))] = value.trimmingCharacters(in: .whitespaces)
            }
            body = parts.dropFirst().joined(separator: "\n\n")
        }
    }

    static func harness(clock: ManualClock) async throws -> Harness {
        let app = CrossDeviceApp(
            id: host, name: "Graph notifications sample",
            platforms: [
                .windows: ["Contoso.Sample_8wekyb3d8bbwe"], .ios: ["com.contoso.sample"],
                .android: ["com.contoso.sample"],
            ],
            identity: [
                IdentityRegistration(
                    issuer: Harness.tasksIssuer, audiences: [Harness.tasksAudience],
                    keys: .secret(Secret(Harness.tasksSecret, source: "env:TASKS_SECRET")))
            ],
            publishers: [Publisher(name: "backend", key: Secret(key, source: "env:GRAPH_KEY"))])
        return try await Harness(extraApps: [app], clock: clock)
    }

    /// Sends `example` with the publisher key and `unsID`, as a Graph app server would.
    static func replay(
        _ example: Example, unsID: String, on client: some TestClientProtocol
    ) async throws -> TestResponse {
        var headers = example.headers
        headers[.authorization] = "Bearer \(key)"
        headers[.unsID] = unsID
        return try await client.execute(
            uri: example.path, method: .post, headers: headers, body: ByteBuffer(string: example.body))
    }

    static func subscription(
        _ harness: Harness, user: String, on client: some TestClientProtocol
    ) async throws -> String {
        let token = try await harness.token(app: host, user: user)
        let response = try await client.send(.post, "/v1/apps/\(host)/me/subscription", bearer: token)
        return try #require(response.object.string("id"))
    }

    @Test("the example of 'Create and send a notification' is accepted as it is and answered in Graph's shape")
    func notificationsPost() async throws {
        let clock = ManualClock(date: GraphFixtureTests.start)
        let harness = try await Self.harness(clock: clock)
        let example = try Example("notifications-post.http")
        #expect(example.body.contains(#""displayTimeToLive": "60""#), "the example sends a numeric string")
        try await harness.run { client in
            let unsID = try await Self.subscription(harness, user: "graphnotify", on: client)
            let response = try await Self.replay(example, unsID: unsID, on: client)
            #expect(response.status == .created, "\(response.text)")
            let body = response.object
            #expect(body.string("@odata.context") == "/beta/$metadata#users('graphnotify')/notifications/$entity")
            #expect(body.string("id")?.isEmpty == false)
            #expect(body.string("appNotificationId") == "testDirectToastNotification")
            #expect(body.string("targetHostName") == Self.host)
            #expect(body["displayTimeToLive"] as? Int == 60)
            #expect(body.string("expirationDateTime") == "2019-10-30T23:59:00.000Z")
            #expect(body.string("priority") == "High")
            #expect(body.string("groupName") == "TestGroup")
            let visual = (body["payload"] as? [String: Any])?["visualContent"] as? [String: Any]
            #expect(visual?.string("title") == "Hello World!")
            #expect(visual?.string("body") == "Notifications are Great!")
            #expect(
                (body["targetPolicy"] as? [String: Any])?["platformTypes"] as? [String] == [
                    "windows", "ios", "android",
                ])
            #expect(body["readState"] == nil, "Graph's shape has none of the hub's server-kept state")

            // The hub's own view of the same notification.
            let token = try await harness.token(app: Self.host, user: "graphnotify")
            let history = try await client.send(.get, "/v1/apps/\(Self.host)/me/notifications", bearer: token)
            let stored = history.object.objects("notifications")
            #expect(stored.map { $0.string("appNotificationId") } == ["testDirectToastNotification"])
            #expect(stored.first?["displayTimeToLive"] as? Int == 60)
            #expect(stored.first?.string("priority") == "high")
        }
    }

    @Test("the older page's example is not JSON: 400 saying where")
    func userPostNotifications() async throws {
        let harness = try await Self.harness(clock: ManualClock(date: GraphFixtureTests.start))
        let example = try Example("user-post-notifications.http")
        try await harness.run { client in
            let unsID = try await Self.subscription(harness, user: "graphnotify", on: client)
            let response = try await Self.replay(example, unsID: unsID, on: client)
            #expect(response.status == .badRequest)
            #expect(response.problemType == "invalid-request")
            // The first missing comma: after "appNotificationID-value", before the next key on line 5.
            let detail = response.object.string("detail") ?? ""
            #expect(detail.contains("line 5, column 5"), "\(detail)")
        }
    }

    @Test("Graph's endpointFallback: the iOS device that does not sync gets the fallback's own content; Android none")
    func rawWithFallback() async throws {
        let clock = ManualClock(date: GraphFixtureTests.start)
        let harness = try await Self.harness(clock: clock)
        let example = try Example("raw-with-fallback.http")
        try await harness.run { client in
            let user = "graphnotify"
            let token = try await harness.token(app: Self.host, user: user)
            for (id, platform) in [("phone", "ios"), ("pixel", "android")] {
                let registered = try await client.send(
                    .put, "/v1/apps/\(Self.host)/me/endpoints/\(id)", bearer: token,
                    json:
                        #"{"platform":"\#(platform)","appId":"com.contoso.sample","transport":"recording","token":"t-\#(id)"}"#
                )
                #expect(registered.status == .created, "\(registered.text)")
            }
            let unsID = try await Self.subscription(harness, user: user, on: client)
            let response = try await Self.replay(example, unsID: unsID, on: client)
            #expect(response.status == .created, "\(response.text)")
            let fallback = (response.object["fallbackPolicy"] as? [String: Any])?["endpointFallback"] as? [String: Any]
            #expect(fallback?["fallbackDelayInSeconds"] as? Int == 60)
            #expect(fallback?["platformTypes"] as? [String] == ["ios"])
            #expect(await eventually { harness.custom.deliveries.count == 2 }, "a tap to each device")
            #expect(harness.custom.deliveries.allSatisfy { $0.kind == .shoulderTap })

            clock.advance(by: .seconds(61))
            #expect(await eventually { harness.custom.deliveries(to: "phone").contains { $0.kind == .fallback } })
            let sent = try #require(harness.custom.deliveries(to: "phone").first { $0.kind == .fallback })
            #expect(
                sent.notification?.payload.visualContent
                    == VisualContent(title: "New message", body: "Open the app to read it"))
            #expect(sent.notification?.payload.rawContent == #"{"messageId": 42}"#)
            #expect(await harness.hub.settled())
            #expect(
                !harness.custom.deliveries(to: "pixel").contains { $0.kind == .fallback }, "no fallback for Android")
        }
    }

    @Test("Graph shapes are checked like the hub's own, errors naming the fields the body sent")
    func graphShapeErrors() async throws {
        let harness = try await Self.harness(clock: ManualClock(date: GraphFixtureTests.start))
        try await harness.run { client in
            let unsID = try await Self.subscription(harness, user: "graphnotify", on: client)
            func publish(_ json: String) async throws -> TestResponse {
                try await client.send(
                    .post, "/beta/me/notifications", bearer: Self.key, json: json, headers: [.unsID: unsID])
            }
            let tooSoon = try await publish(
                #"{"appNotificationId":"a","priority":"High","payload":{"rawContent":"x"},"targetPolicy":{"platformTypes":["iOS"]},"fallbackPolicy":{"endpointFallback":{"platformTypes":["android"],"fallbackDelayInSeconds":"30"}}}"#
            )
            #expect(tooSoon.status == .badRequest)
            #expect(
                Set(tooSoon.errorFields)
                    == [
                        "fallbackPolicy.endpointFallback.fallbackDelayInSeconds",
                        "fallbackPolicy.endpointFallback.platformTypes[0]",
                    ], "\(tooSoon.text)")
            let notNumbers = try await publish(
                #"{"appNotificationId":"b","payload":{"rawContent":"x"},"displayTimeToLive":"sixty","fallbackPolicy":{"endpointFallback":{}}}"#
            )
            #expect(
                Set(notNumbers.errorFields)
                    == ["displayTimeToLive", "fallbackPolicy.endpointFallback.fallbackDelayInSeconds"],
                "\(notNumbers.text)")
            let both = try await publish(
                #"{"appNotificationId":"c","payload":{"rawContent":"x"},"fallbackPolicy":{"timeoutSeconds":60,"endpointFallback":{"fallbackDelayInSeconds":60}}}"#
            )
            #expect(both.errorFields == ["fallbackPolicy.timeoutSeconds"], "\(both.text)")
        }
    }
}
