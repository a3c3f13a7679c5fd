import Foundation
import HubTesting
import Testing

/// `hub serve` with many waiting requests: SIGTERM answers them at once, a client that leaves
/// releases its wait. Over real sockets against the real binary.
@Suite("hub serve shutdown with waiters", .serialized)
struct ShutdownTests {
    static let feed = "/v1/apps/notes.contoso.com/me/feed"

    @Test(
        "SIGTERM answers 500 parked long-polls (503, Retry-After) and ends 500 event streams (event: shutdown); the hub exits within 2 s",
        .timeLimit(.minutes(3)))
    func thousandWaiters() async throws {
        let workspace = try makeWorkspace()
        // All 1,000 come from 127.0.0.1 with one user token: above the default caps per client
        // and per token.
        try writeServeConfig(
            in: workspace, extra: "rateLimits: { deviceToken: off }", server: "connections: { maxPerClient: 2000 }")
        let hub = try await RunningHub(directory: workspace)
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let token = try await http.userToken("alice")
        let cursor = try await http.cursor(user: "alice", token: token)

        let auth = ["Authorization": "Bearer \(token)"]
        // The streams first (they wait for good), then the long-polls, opened concurrently so
        // that their 60 s waits (the server's maximum) are far from over at SIGTERM, however busy
        // the machine.
        let port = hub.port
        let streams = try await Self.open(500, port: port) { stream in
            try await stream.get(
                Self.feed, headers: auth.merging(["Accept": "text/event-stream", "Last-Event-ID": cursor]) { $1 })
        }
        let polls = try await Self.open(500, port: port) { poll in
            try await poll.get(Self.feed + "?cursor=\(cursor)&wait=60", headers: auth)
        }
        // Every one of them waits in the hub (the long-polls are parked, not answered).
        #expect(await http.waitForWaiters(timeout: .seconds(60)) { $0 == 1000 }, "\(hub.log.suffix(2000))")
        #expect(polls.allSatisfy { $0.received.isEmpty && $0.closedAt == nil })

        let sent = ContinuousClock.now
        hub.signal(SIGTERM)
        let status = await hub.waitForExit(timeout: 30)
        let exited = ContinuousClock.now - sent
        try #require(status == 0, "hub serve did not exit within 30 s of SIGTERM: \(hub.log.suffix(2000))")
        print("hub serve exited \(exited) after SIGTERM with 500 long-polls and 500 event streams waiting")
        #expect(exited < .seconds(2), "hub serve took \(exited) to exit")

        let closing = ContinuousClock.now + .seconds(5)
        for connection in polls + streams { await connection.waitForClose(timeout: closing - .now) }
        let answered = polls.filter {
            let text = $0.received.lowercased()
            return text.hasPrefix("http/1.1 503") && text.contains("retry-after: 1")
                && text.contains("application/problem+json") && text.contains("shutting down")
        }
        #expect(answered.count == polls.count, "a long-poll got: \(polls.first?.received ?? "")")
        let ended = streams.filter { $0.received.contains("event: shutdown\ndata: {\"retryAfter\":1}") }
        #expect(ended.count == streams.count, "a stream got: \(streams.first?.received ?? "")")
        #expect((polls + streams).allSatisfy { $0.closedAt != nil })
    }

    /// Opens `count` connections to the hub, 50 at a time, and sends each its request.
    static func open(
        _ count: Int, port: Int, request: @escaping @Sendable (RawConnection) async throws -> Void
    ) async throws -> [RawConnection] {
        var connections: [RawConnection] = []
        for start in stride(from: 0, to: count, by: 50) {
            try await withThrowingTaskGroup(of: RawConnection.self) { group in
                for _ in start..<min(count, start + 50) {
                    group.addTask {
                        let connection = try await RawConnection.open(port: port)
                        try await request(connection)
                        return connection
                    }
                }
                for try await connection in group { connections.append(connection) }
            }
        }
        return connections
    }

    @Test("a long-poll or event stream whose client disconnects releases its wait at once", .timeLimit(.minutes(2)))
    func disconnectReleasesWaiter() async throws {
        let hub = try await RunningHub.served()
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let token = try await http.userToken("alice")
        let cursor = try await http.cursor(user: "alice", token: token)

        let poll = try await RawConnection.open(port: hub.port)
        try await poll.get(Self.feed + "?cursor=\(cursor)&wait=60", headers: ["Authorization": "Bearer \(token)"])
        #expect(await http.waitForWaiters(timeout: .seconds(20)) { $0 == 1 })
        await poll.close()
        // The wait would last 60 s; it is gone long before.
        #expect(await http.waitForWaiters(timeout: .seconds(10)) { $0 == 0 }, "the long-poll's waiter stayed")

        let stream = try await RawConnection.open(port: hub.port)
        try await stream.get(
            Self.feed,
            headers: ["Authorization": "Bearer \(token)", "Accept": "text/event-stream", "Last-Event-ID": cursor])
        #expect(await http.waitForWaiters(timeout: .seconds(20)) { $0 == 1 })
        await stream.close()
        #expect(await http.waitForWaiters(timeout: .seconds(10)) { $0 == 0 }, "the event stream's waiter stayed")
    }
}

extension HubHTTP {
    /// The cursor at the end of the user's feed.
    func cursor(user: String, token: String) async throws -> String {
        let body = try await request(.GET, "/v1/apps/notes.contoso.com/me/feed?limit=1000", bearer: token).body
        let page = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
        return try #require(page["cursor"] as? String)
    }

    /// A gauge or counter of `/metrics` (the first sample of that name), if present.
    func metric(_ name: String) async throws -> Double? {
        let text = try await request(.GET, "/metrics", bearer: "").body
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    /// Scrapes `hub_feed_waiters` until `condition` holds or `timeout` passed.
    func waitForWaiters(timeout: Duration, _ condition: (Int) -> Bool) async -> Bool {
        await eventually(timeout: timeout) {
            guard let value = try? await metric("hub_feed_waiters") else { return false }
            return condition(Int(value))
        }
    }
}
