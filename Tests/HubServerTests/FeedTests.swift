import AsyncHTTPClient
import Foundation
import HTTPTypes
import HubCore
import HubPolling
import HubServer
import HubTesting
import HummingbirdTesting
import Logging
import Testing

@Suite("Feed sync")
struct FeedTests {
    static let feed = "/v1/apps/\(Harness.notes)/me/feed"

    @Test("pages follow the cursor and say when more is waiting")
    func paging() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            for index in 1...3 { _ = try await client.publish(notification("n\(index)"), user: "alice") }
            let first = try await client.send(.get, Self.feed + "?limit=2", bearer: alice)
            #expect(first.status == .ok)
            #expect(first.object.objects("changes").compactMap { $0.string("appNotificationId") } == ["n1", "n2"])
            #expect(first.object["hasMore"] as? Bool == true)
            let cursor = try #require(first.object.string("cursor"))

            let second = try await client.send(.get, Self.feed + "?limit=2&cursor=\(cursor)", bearer: alice)
            #expect(second.object.objects("changes").compactMap { $0.string("appNotificationId") } == ["n3"])
            #expect(second.object["hasMore"] as? Bool == false)
            let next = try #require(second.object.string("cursor"))

            let third = try await client.send(.get, Self.feed + "?cursor=\(next)", bearer: alice)
            #expect(third.object.objects("changes").isEmpty)
            #expect(third.object.string("cursor") == next)

            // A change after the cursor shows up, as the only change.
            _ = try await client.send(
                .patch, "/v1/apps/\(Harness.notes)/me/notifications/n1", bearer: alice, json: #"{"readState":"read"}"#)
            let changed = try await client.send(.get, Self.feed + "?cursor=\(next)", bearer: alice)
            #expect(changed.object.objects("changes").compactMap { $0.string("readState") } == ["read"])
        }
    }

    @Test("a tampered or foreign-app cursor is refused with invalid-cursor")
    func tamperedCursor() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let aliceOnTasks = try await harness.token(app: Harness.tasks, user: "alice")
        try await harness.run { client in
            _ = try await client.publish(notification("n1"), user: "alice")
            let page = try await client.send(.get, Self.feed, bearer: alice)
            let cursor = try #require(page.object.string("cursor"))
            var bytes = Array(cursor)
            bytes[3] = bytes[3] == "A" ? "B" : "A"
            for bad in [String(bytes), "garbage!", String(cursor.dropLast(2))] {
                let response = try await client.send(.get, Self.feed + "?cursor=\(bad)", bearer: alice)
                #expect(response.status == .badRequest)
                #expect(response.problemType == "invalid-cursor")
            }
            let otherApp = try await client.send(
                .get, "/v1/apps/\(Harness.tasks)/me/feed?cursor=\(cursor)", bearer: aliceOnTasks)
            #expect(otherApp.problemType == "invalid-cursor")
            let badWait = try await client.send(.get, Self.feed + "?wait=soon&limit=5000", bearer: alice)
            #expect(Set(badWait.errorFields) == ["wait", "limit"])
        }
    }

    @Test("a long-poll is woken by a publish")
    func longPollWokenByPublish() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let start = try await client.send(.get, Self.feed, bearer: alice)
            let cursor = try #require(start.object.string("cursor"))
            async let poll = client.send(.get, Self.feed + "?wait=10&cursor=\(cursor)", bearer: alice)
            #expect(await eventually { (harness.hub.waitingRoom?.waiterCount ?? 0) > 0 })
            _ = try await client.publish(notification("wake-up"), user: "alice")
            let response = try await poll
            #expect(response.status == .ok)
            #expect(response.object.objects("changes").compactMap { $0.string("appNotificationId") } == ["wake-up"])
        }
    }

    @Test("a server that cannot park a waiting request says so instead of waiting in a task")
    func waitingNeedsTheHubServer() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        // HummingbirdTesting's router client has no connection pipeline to park a request in.
        try await harness.run(.router) { client in
            let poll = try await client.send(.get, Self.feed + "?wait=5", bearer: alice)
            #expect(poll.status == .serviceUnavailable)
            #expect(poll.problemType == "unavailable")
            #expect(poll.text.contains(".hubHTTP1"), "\(poll.text)")
            let stream = try await client.send(
                .get, Self.feed, bearer: alice, headers: [.accept: "text/event-stream"])
            #expect(stream.status == .serviceUnavailable)
            #expect(stream.text.contains(".hubHTTP1"), "\(stream.text)")
            let plain = try await client.send(.get, Self.feed + "?wait=0", bearer: alice)
            #expect(plain.status == .ok, "a poll without a wait needs no parking")
            #expect(harness.hub.waitingRoom?.waiterCount == 0)
        }
    }

    @Test("universal dismiss: the other endpoint's long-poll wakes; the dismissing one is not woken")
    func universalDismiss() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            for endpoint in ["phone-a", "tablet-b"] {
                let response = try await client.send(
                    .put, "/v1/apps/\(Harness.notes)/me/endpoints/\(endpoint)", bearer: alice,
                    json: DeviceRoutesTests.pollingEndpoint)
                #expect(response.status == .created)
            }
            // Both endpoints' long-polls wake with the publish (no outbox rows: the hub wakes them).
            let start = try #require(try await client.send(.get, Self.feed, bearer: alice).object.string("cursor"))
            async let phoneFirst = devicePoll(
                port: port, Self.feed + "?wait=30&cursor=\(start)", bearer: alice, endpoint: "phone-a")
            async let tabletFirst = devicePoll(
                port: port, Self.feed + "?wait=30&cursor=\(start)", bearer: alice, endpoint: "tablet-b")
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 2 })
            _ = try await client.publish(notification("dismiss-me"), user: "alice")
            for poll in [try await phoneFirst, try await tabletFirst] {
                #expect(poll.objects("changes").compactMap { $0.string("appNotificationId") } == ["dismiss-me"])
            }
            #expect(try await harness.hub.deliveryStatistics().pending == 0, "polling endpoints get no outbox rows")
            let page = try await client.send(.get, Self.feed, bearer: alice)
            let cursor = try #require(page.object.string("cursor"))

            async let phonePoll = devicePoll(
                port: port, Self.feed + "?wait=3&cursor=\(cursor)", bearer: alice, endpoint: "phone-a")
            async let tabletPoll = devicePoll(
                port: port, Self.feed + "?wait=10&cursor=\(cursor)", bearer: alice, endpoint: "tablet-b")
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 2 })
            let dismissed = try await client.send(
                .patch, "/v1/apps/\(Harness.notes)/me/notifications/dismiss-me", bearer: alice,
                json: #"{"userActionState":"dismissed"}"#, headers: [.hubEndpoint: "phone-a"])
            #expect(dismissed.status == .ok)
            let dismissedAt = ContinuousClock.now

            let woken = try await tabletPoll
            #expect(woken.objects("changes").compactMap { $0.string("userActionState") } == ["dismissed"])
            // The phone made the change: its own long-poll is not woken; it ends at its 3 s wait
            // and then reads the feed, which holds the phone's own change.
            #expect(harness.hub.waitingRoom?.waiterCount == 1)
            let ownPoll = try await phonePoll
            #expect(ContinuousClock.now - dismissedAt >= .seconds(2), "the phone's poll was woken early")
            #expect(ownPoll.objects("changes").compactMap { $0.string("userActionState") } == ["dismissed"])
            #expect(
                harness.polling.deliveries(to: "phone-a").isEmpty && harness.polling.deliveries(to: "tablet-b").isEmpty)
        }
    }

    @Test("server-sent events carry each change with its cursor as ID, and resume from Last-Event-ID")
    func serverSentEvents() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            _ = try await client.publish(notification("first"), user: "alice")
            let stream = try await EventStreamReader(port: port, path: Self.feed, bearer: alice)
            let first = try await stream.nextEvent()
            #expect(first.event == "notification")
            #expect(first.data.contains(#""appNotificationId":"first""#))
            let firstID = try #require(first.id)

            // A change published while the stream is open arrives on it.
            _ = try await client.publish(notification("second"), user: "alice")
            let second = try await stream.nextEvent()
            #expect(second.data.contains(#""appNotificationId":"second""#))
            try await stream.close()

            // Resuming after the first event replays the second only.
            let resumed = try await EventStreamReader(
                port: port, path: Self.feed, bearer: alice, lastEventID: firstID)
            let replayed = try await resumed.nextEvent()
            #expect(replayed.data.contains(#""appNotificationId":"second""#))
            #expect(replayed.id != firstID)
            try await resumed.close()
        }
    }

    @Test("heartbeats read nothing from the store; a change is read once and sent", .timeLimit(.minutes(1)))
    func heartbeatsReadNothing() async throws {
        let plug = StorePlug()
        let harness = try await Harness(plug: plug)
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            _ = try await client.publish(notification("n1"), user: "alice")
            // A push endpoint: a sync of the feed by hand is recorded (a store write) when it reads.
            let registered = try await client.send(
                .put, "/v1/apps/\(Harness.notes)/me/endpoints/phone", bearer: alice,
                json: #"{"platform":"android","appId":"com.contoso.notes","transport":"recording","token":"t1"}"#)
            #expect(registered.status == .created, "\(registered.text)")
            let stream = try await EventStreamReader(
                port: try #require(client.port), path: Self.feed, bearer: alice, endpoint: "phone")
            #expect(try await stream.nextEvent().data.contains("n1"))
            let reads = plug.calls("feed")
            let writes = plug.calls("touchEndpoint")
            #expect(try await stream.readKeepalives(4))  // 4 heartbeats of 300 ms
            #expect(plug.calls("feed") == reads)
            #expect(plug.calls("touchEndpoint") == writes)
            _ = try await client.publish(notification("n2"), user: "alice")
            #expect(try await stream.nextEvent().data.contains("n2"))
            #expect(plug.calls("feed") == reads + 1)
            try await stream.close()
        }
    }

    @Test("a quiet stream sends keepalive comments")
    func keepalive() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let stream = try await EventStreamReader(port: try #require(client.port), path: Self.feed, bearer: alice)
            #expect(try await stream.waitForKeepalive())
            try await stream.close()
        }
    }
}

extension HTTPField.Name {
    static let hubEndpoint = HTTPField.Name("X-Hub-Endpoint")!
}

@Suite("Server lifecycle")
struct ServerLifecycleTests {
    /// Holds a reader across the end of the test server.
    final class ReaderBox: @unchecked Sendable {
        var reader: EventStreamReader?
    }

    @Test("graceful shutdown ends open event streams", .timeLimit(.minutes(1)))
    func gracefulShutdownEndsStreams() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let box = ReaderBox()
        let app = buildApplication(
            hub: harness.hub, configuration: harness.configuration, identity: harness.identity, metrics: nil,
            logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await harness.hub.run() }
            defer { group.cancelAll() }
            // `.live` runs the application in a service group and shuts it down gracefully at the end.
            try await app.test(.live) { client in
                _ = try await client.publish(notification("n1"), user: "alice")
                let reader = try await EventStreamReader(
                    port: try #require(client.port), path: FeedTests.feed, bearer: alice)
                box.reader = reader
                #expect(try await reader.nextEvent().data.contains("n1"))
            }
        }
        // The server returned, so the stream was finished rather than left hanging.
        let reader = try #require(box.reader)
        await #expect(throws: EventStreamReader.StreamError.self) {
            while true { _ = try await reader.nextEvent() }
        }
        try await reader.close()
    }
}

/// A device's long-poll on a connection of its own, as devices hold theirs (the live test client
/// sends every request on one connection, one after the other).
func devicePoll(port: Int, _ path: String, bearer: String, endpoint: String) async throws -> DevicePage {
    var request = HTTPClientRequest(url: "http://localhost:\(port)\(path)")
    request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
    request.headers.add(name: "X-Hub-Endpoint", value: endpoint)
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(40))
    return DevicePage(body: Data(try await response.body.collect(upTo: 1 << 20).readableBytesView))
}

/// The page a ``devicePoll(port:_:bearer:endpoint:)`` got.
struct DevicePage: Sendable {
    let body: Data

    func objects(_ key: String) -> [[String: Any]] {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]).objects(key)
    }
}
