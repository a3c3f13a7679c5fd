import Foundation
import Testing

/// `server.connections` against `hub serve`, with real slow sockets: timeouts configured short in
/// hub.yaml, asserted with generous bounds.
@Suite("hub serve connection limits", .serialized)
struct ConnectionLimitTests {
    static let timeouts = "connections: { headerTimeout: 2s, bodyTimeout: 3s, idleTimeout: 4s }"

    @Test("a connection that sends nothing, or trickles its head, is closed after the header timeout")
    func headerTimeout() async throws {
        let hub = try await RunningHub.served(server: Self.timeouts)
        defer { hub.signal(SIGKILL) }

        // Taken before connecting: the server's clock for a connection starts after its connect.
        let opened = ContinuousClock.now
        let silent = try await RawConnection.open(port: hub.port)
        let trickle = try await RawConnection.open(port: hub.port)
        // On a stalled machine the server may have cut it already (after its 2 s): that is the
        // outcome checked below, so a failed write is not an error here.
        try? await trickle.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        // One header byte every 200 ms: each byte arrives well within the timeout, the head never does.
        let trickling = Task {
            for _ in 0..<40 {
                try? await trickle.send("X")
                try? await Task.sleep(for: .milliseconds(200))  // the trickle's pace: the header timeout is real time
            }
        }
        defer { trickling.cancel() }
        #expect(await silent.waitForClose(timeout: .seconds(30)))
        #expect(await trickle.waitForClose(timeout: .seconds(30)))
        for connection in [silent, trickle] {
            let after = try #require(connection.closedAt) - opened
            #expect(after >= .seconds(2) && after < .seconds(17), "closed after \(after)")
            #expect(connection.received.isEmpty)
        }
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.metric(#"hub_connections_cut_total{reason="header_timeout"}"#) == 2)
    }

    @Test("a request that stops after 10 bytes of its declared body is closed after the body timeout")
    func bodyTimeout() async throws {
        let hub = try await RunningHub.served(server: Self.timeouts)
        defer { hub.signal(SIGKILL) }
        let publisherKey = "fixture-publisher-key-0123456789"

        let upload = try await RawConnection.open(port: hub.port)
        let stalled = ContinuousClock.now  // before the head is sent: the body's clock starts after it
        try await upload.send(
            "POST /v1/apps/notes.contoso.com/users/alice/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer \(publisherKey)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                + #"{"appNotif"#)
        #expect(await upload.waitForClose(timeout: .seconds(30)))
        let after = try #require(upload.closedAt) - stalled
        // Not the header timeout (2 s): the head was complete.
        #expect(after >= .seconds(3) && after < .seconds(18), "closed after \(after)")
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.metric(#"hub_connections_cut_total{reason="body_timeout"}"#) == 1)
        #expect(try await http.feedIDs(user: "alice").isEmpty)
    }

    @Test("an idle keep-alive connection is closed after the idle timeout; a long-poll is not idle")
    func idleTimeout() async throws {
        let hub = try await RunningHub.served(server: Self.timeouts)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let token = try await http.userToken("alice")
        let cursor = try await http.cursor(user: "alice", token: token)

        let idle = try await RawConnection.open(port: hub.port)
        let asked = ContinuousClock.now  // before the request: the idle clock starts after its answer
        try await idle.get("/healthz")
        #expect(await idle.waitForReceived(timeout: .seconds(10)) { $0.contains("\"ok\"") })
        // A long-poll of 8 s outlasts every timeout of this hub and is answered, not cut.
        let poll = try await RawConnection.open(port: hub.port)
        try await poll.get(
            "/v1/apps/notes.contoso.com/me/feed?cursor=\(cursor)&wait=8", headers: ["Authorization": "Bearer \(token)"])
        #expect(await idle.waitForClose(timeout: .seconds(30)))
        let after = try #require(idle.closedAt) - asked
        #expect(after >= .seconds(4) && after < .seconds(19), "closed after \(after)")
        #expect(await poll.waitForReceived(timeout: .seconds(20)) { $0.contains("\"changes\"") })
        #expect(poll.received.hasPrefix("HTTP/1.1 200"), "\(poll.received)")
        #expect(try await http.metric(#"hub_connections_cut_total{reason="idle_timeout"}"#) ?? 0 >= 1)
    }

    @Test("the per-client cap answers the next connection 503 and closes it; closing one makes room")
    func perClientCap() async throws {
        let hub = try await RunningHub.served(server: "connections: { maxPerClient: 3 }")
        defer { hub.signal(SIGKILL) }

        var held: [RawConnection] = []
        for _ in 0..<3 {
            let connection = try await RawConnection.open(port: hub.port)
            try await connection.get("/healthz")
            #expect(await connection.waitForReceived(timeout: .seconds(10)) { $0.contains("\"ok\"") })
            held.append(connection)
        }
        let refused = try await RawConnection.open(port: hub.port)
        #expect(await refused.waitForClose(timeout: .seconds(10)))
        #expect(refused.received.hasPrefix("HTTP/1.1 503"), "\(refused.received)")
        #expect(refused.received.lowercased().contains("retry-after: 1"))
        #expect(held.allSatisfy { $0.closedAt == nil })

        await held[0].close()
        let next = try await RawConnection.open(port: hub.port)
        try await next.get("/metrics")
        #expect(await next.waitForReceived(timeout: .seconds(10)) { $0.contains("hub_connections_open") })
        #expect(next.received.contains(#"hub_connections_cut_total{reason="max_connections_per_client"} 1"#))
        #expect(next.received.contains("hub_connections_open 3"))
    }

    @Test("the total cap answers the next connection 503 and closes it")
    func totalCap() async throws {
        let hub = try await RunningHub.served(server: "connections: { max: 2 }, trustedProxies: [127.0.0.1]")
        defer { hub.signal(SIGKILL) }
        let first = try await RawConnection.open(port: hub.port)
        let second = try await RawConnection.open(port: hub.port)
        try await second.get("/healthz")
        #expect(await second.waitForReceived(timeout: .seconds(10)) { $0.contains("\"ok\"") })
        let refused = try await RawConnection.open(port: hub.port)
        #expect(await refused.waitForClose(timeout: .seconds(10)))
        #expect(refused.received.hasPrefix("HTTP/1.1 503"), "\(refused.received)")
        #expect(first.closedAt == nil)
        await first.close()
        try await second.get("/metrics")
        #expect(await second.waitForReceived(timeout: .seconds(10)) { $0.contains(#"reason="max_connections"} 1"#) })
    }
}
