import Foundation
import HubCore
import HubPolling
import HubServer
import HubTesting
import HummingbirdTesting
import Testing

/// Long-polls on the hub's own server (`.live`): they park in the connection's pipeline
/// (`ParkingHandler`) instead of holding a task, and answer from there.
@Suite("Parked long-polls")
struct ParkedWaitTests {
    static let feed = FeedTests.feed

    @Test("a parked long-poll is woken by a publish pipelined behind it; the answers keep their order")
    func wokenByPipelinedPublish() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let start = try await client.send(.get, Self.feed, bearer: alice)
            let cursor = try #require(start.object.string("cursor"))
            async let poll = client.send(.get, Self.feed + "?wait=10&cursor=\(cursor)", bearer: alice)
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 1 })
            // The test client has one connection: the publish is read and answered while the
            // long-poll is parked (a long-poll waiting in its task would hold it for 10 s), and
            // its answer goes out after the long-poll's.
            let began = ContinuousClock.now
            let published = try await client.publish(notification("wake-up"), user: "alice")
            #expect(published.status == .created)
            #expect(ContinuousClock.now - began < .seconds(5))
            let response = try await poll
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json; charset=utf-8")
            #expect(response.object.objects("changes").compactMap { $0.string("appNotificationId") } == ["wake-up"])
            #expect(harness.hub.waitingRoom?.waiterCount == 0)
        }
    }

    @Test("a parked long-poll that nothing wakes answers an empty page with the same cursor at its wait's end")
    func timesOut() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let start = try await client.send(.get, Self.feed, bearer: alice)
            let cursor = try #require(start.object.string("cursor"))
            let began = ContinuousClock.now
            let response = try await client.send(.get, Self.feed + "?wait=1&cursor=\(cursor)", bearer: alice)
            #expect(ContinuousClock.now - began >= .milliseconds(900))
            #expect(response.status == .ok)
            #expect(response.object.objects("changes").isEmpty)
            #expect(response.object.string("cursor") == cursor)
            // The connection goes on serving.
            #expect(try await client.send(.get, Self.feed, bearer: alice).status == .ok)
        }
    }

    @Test("a parked long-poll asked with Connection: close is answered before the connection closes")
    func connectionClose() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let response = try await RawHTTP.get(
                port: port, Self.feed + "?wait=1", headers: ["Authorization: Bearer \(alice)", "Connection: close"])
            #expect(response.status == 200, "\(response.body)")
            #expect(response.body.contains(#""changes":[]"#))
        }
    }
}
