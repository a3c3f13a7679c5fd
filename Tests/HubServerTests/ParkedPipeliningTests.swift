import Foundation
import HubCore
import HubPolling
import HubTesting
import Testing

@testable import HubServer

/// Parked long-polls with other requests pipelined behind them on one keep-alive connection
/// (HummingbirdTesting's live client sends concurrent requests so): every request behind a parked
/// one is read and run, and the answers go out in request order (RFC 9112, 9.3.2).
@Suite("Parked long-polls, pipelined")
struct ParkedPipeliningTests {
    static let feed = FeedTests.feed

    static func poll(wait: Int, cursor: String, bearer: String) -> String {
        "GET \(feed)?wait=\(wait)&cursor=\(cursor) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(bearer)\r\n\r\n"
    }

    static func publish(_ id: String) -> String {
        let body = notification(id)
        return "POST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: x\r\n"
            + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    @Test("two parked long-polls and the publish that wakes them, pipelined: both woken, answered in order")
    func twoPollsAndTheirWaker() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let cursor = try #require(try await client.send(.get, Self.feed, bearer: alice).object.string("cursor"))
            let connection = try PipelinedConnection(port: port)
            let poll = Self.poll(wait: 10, cursor: cursor, bearer: alice)
            let began = ContinuousClock.now
            try connection.write(poll + poll + Self.publish("wake-up"))
            let answers = try await connection.responses(3)
            // Before, the second long-poll's placeholder waited behind the first: the publish was
            // not read until the first long-poll's wait ended (10 s), which then answered empty.
            #expect(ContinuousClock.now - began < .seconds(5))
            #expect(answers.map(\.status) == [200, 200, 201])
            for answer in answers.prefix(2) {
                #expect(answer.body.contains(#""changes":[{"#), "\(answer.body)")
                #expect(answer.body.contains(#""appNotificationId":"wake-up""#), "\(answer.body)")
            }
            #expect(!answers[2].body.contains(#""changes""#), "the publish's answer: \(answers[2].body)")
            #expect(harness.hub.waitingRoom?.waiterCount == 0)
        }
    }

    @Test("the second of two pipelined parked long-polls times out: its empty answer waits for the first's")
    func secondTimesOut() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let cursor = try #require(try await client.send(.get, Self.feed, bearer: alice).object.string("cursor"))
            let connection = try PipelinedConnection(port: port)
            try connection.write(
                Self.poll(wait: 10, cursor: cursor, bearer: alice) + Self.poll(wait: 1, cursor: cursor, bearer: alice))
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 2 })
            // The second one's wait ends; its answer is held behind the first's.
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 1 })
            let began = ContinuousClock.now
            try connection.write(Self.publish("late"))
            let answers = try await connection.responses(3)
            #expect(ContinuousClock.now - began < .seconds(5))
            #expect(answers.map(\.status) == [200, 200, 201])
            #expect(answers[0].body.contains(#""appNotificationId":"late""#), "\(answers[0].body)")
            #expect(answers[1].body.contains(#""changes":[]"#), "\(answers[1].body)")
            #expect(answers[1].body.contains(cursor), "\(answers[1].body)")
        }
    }

    @Test("past the answers that may wait behind a parked long-poll, the connection reads no further until one went")
    func lineIsBounded() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let cursor = try #require(try await client.send(.get, Self.feed, bearer: alice).object.string("cursor"))
            let connection = try PipelinedConnection(port: port)
            // The first long-poll waits 2 s; one more than the line holds wait behind it, then a
            // publish: it is read only once the first one answered (at its wait's end, empty).
            let behind = ParkingHandler.maxWaitingBehind + 1
            let requests =
                Self.poll(wait: 2, cursor: cursor, bearer: alice)
                + String(repeating: Self.poll(wait: 10, cursor: cursor, bearer: alice), count: behind)
                + Self.publish("after-the-line")
            let began = ContinuousClock.now
            try connection.write(requests)
            let answers = try await connection.responses(behind + 2)
            #expect(ContinuousClock.now - began >= .milliseconds(1900))
            #expect(answers.map(\.status) == Array(repeating: 200, count: behind + 1) + [201])
            #expect(answers[0].body.contains(#""changes":[]"#), "\(answers[0].body)")
            for answer in answers.dropFirst().prefix(behind) {
                #expect(answer.body.contains(#""appNotificationId":"after-the-line""#), "\(answer.body)")
            }
        }
    }

    @Test("an event stream pipelined behind a parked long-poll starts after the long-poll's answer")
    func eventStreamBehindAPoll() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let cursor = try #require(try await client.send(.get, Self.feed, bearer: alice).object.string("cursor"))
            let connection = try PipelinedConnection(port: port)
            let stream =
                "GET \(Self.feed)?cursor=\(cursor) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n"
                + "Accept: text/event-stream\r\n\r\n"
            try connection.write(Self.poll(wait: 10, cursor: cursor, bearer: alice) + stream)
            // Both wait: the long-poll parked, the stream (its head held behind the poll's answer) idle.
            #expect(await eventually { harness.hub.waitingRoom?.waiterCount == 2 })
            #expect(try await client.publish(notification("streamed"), user: "alice").status == .created)
            let answer = try #require(try await connection.responses(1).first)
            #expect(answer.status == 200)
            #expect(answer.body.contains(#""appNotificationId":"streamed""#), "\(answer.body)")
            let text = try await connection.text { $0.contains("streamed") }
            #expect(text.hasPrefix("HTTP/1.1 200 "), "\(text.prefix(600))")
            #expect(text.lowercased().contains("content-type: text/event-stream"), "\(text.prefix(600))")
            #expect(text.contains("retry: 3000"), "\(text.prefix(600))")
        }
    }
}
