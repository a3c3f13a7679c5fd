import Foundation
import HubEmulators
import HubHTTP2
import HubTesting
import NIOCore
import NIOPosix
import Testing

@Suite("HTTP/2 client: connection reuse, GOAWAY and close recovery, refused streams, deadlines, stream limits")
struct HTTP2ClientTests {
    /// Runs `body` with a scripted server and a client that trusts it; shuts both down afterwards.
    private func withServer(
        maxConcurrentStreams: Int = 100, configure: (inout HTTP2Client.Configuration) -> Void = { _ in },
        _ body: (ScriptedHTTP2Server, HTTP2Client, HTTP2Origin) async throws -> Void
    ) async throws {
        let server = try await ScriptedHTTP2Server.start(maxConcurrentStreams: maxConcurrentStreams)
        var configuration = HTTP2Client.Configuration(trustRootsPEM: [server.authority.certificatePEM])
        configure(&configuration)
        let client = try HTTP2Client(configuration: configuration)
        let origin = HTTP2Origin(scheme: "https", host: "127.0.0.1", port: server.port)
        do {
            try await body(server, client, origin)
        } catch {
            await client.shutdown(grace: .zero)
            try? await server.shutdown()
            throw error
        }
        await client.shutdown(grace: .zero)
        try await server.shutdown()
    }

    private func post(
        _ client: HTTP2Client, _ origin: HTTP2Origin, timeout: Duration = .seconds(10)
    ) async throws(HTTP2ClientError) -> HTTP2Response {
        var request = HTTP2Request(path: "/echo", headers: ["content-type": "application/json"])
        request.body = ByteBuffer(string: #"{"n":1}"#)
        return try await client.execute(request, to: origin, timeout: timeout)
    }

    /// `count` requests, `concurrency` at a time. - Returns: the statuses, or the errors' codes.
    private func burst(
        _ client: HTTP2Client, _ origin: HTTP2Origin, count: Int, timeout: Duration = .seconds(10)
    ) async -> [String] {
        await withTaskGroup(of: String.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do throws(HTTP2ClientError) {
                        return String(try await post(client, origin, timeout: timeout).status)
                    } catch {
                        return error.code.rawValue
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test("many requests, sequential and concurrent up to the stream limit, share one connection")
    func reuse() async throws {
        try await withServer { server, client, origin in
            for _ in 0..<20 {
                let status = try await post(client, origin).status
                #expect(status == 200)
            }
            for _ in 0..<3 {
                let statuses = await burst(client, origin, count: 100)
                #expect(statuses.allSatisfy { $0 == "200" }, "\(Set(statuses))")
            }
            #expect(server.snapshot.connections == 1)
            #expect(server.snapshot.requests == 320)
            #expect(client.connectionCount(to: origin) == 1)
        }
    }

    @Test("the request and the response arrive whole: method, path, headers, body, status")
    func exchange() async throws {
        try await withServer { _, client, origin in
            let response = try await post(client, origin)
            #expect(response.status == 200)
            #expect(String(buffer: response.body) == "ok")
            #expect(response.headers.first(name: ":status") == "200")
            // Not the decoder's block with room for 16 fields: that one is freed on the event loop
            // (see HTTP2Streams.compact; freed here, it made the threads wait on malloc's lock).
            #expect(response.headers.capacity < 16, "\(response.headers.capacity)")
        }
    }

    @Test("a request's header block: pseudo-headers first, then its fields, then content-length when configured")
    func requestHeaderBlock() async throws {
        try await withServer { server, client, origin in
            _ = try await post(client, origin)
            #expect(
                server.snapshot.lastRequestHeaders == [
                    ":method: POST", ":scheme: https", ":authority: 127.0.0.1:\(server.port)", ":path: /echo",
                    "content-type: application/json", "content-length: 7",
                ])
        }
    }

    @Test("a prepared request goes out as written: its pseudo-headers, its fields, no content-length added")
    func preparedRequest() async throws {
        try await withServer { server, client, origin in
            var request = HTTP2PreparedRequest(origin: origin, path: "/3/device/abc", pathIndexing: .nonIndexable)
            request.addHeader(name: "apns-topic", value: "com.example")
            request.addHeader(name: "authorization", value: "bearer x", indexing: .neverIndexed)
            request.body = ByteBuffer(string: "{}")
            // content-length is added to HTTP2Request's block only (requestHeaderBlock); a prepared
            // block is never added to.
            let response = try await client.execute(request, timeout: .seconds(10))
            #expect(response.status == 200 && String(buffer: response.body) == "ok")
            #expect(
                server.snapshot.lastRequestHeaders == [
                    ":method: POST", ":scheme: https", ":authority: 127.0.0.1:\(server.port)",
                    ":path: /3/device/abc", "apns-topic: com.example", "authorization: bearer x",
                ])
            // The same connection serves both kinds of request.
            _ = try await post(client, origin)
            #expect(server.snapshot.connections == 1)
        }
    }

    @Test("after the server closes the connection, the next request opens a new one")
    func serverClose() async throws {
        try await withServer { server, client, origin in
            server.setScript { connection, _ in connection == 1 ? .answerAndClose : .answer() }
            let status = try await post(client, origin).status
            #expect(status == 200)
            // The client saw the close: the connection is gone or takes no new stream.
            #expect(await eventually { client.connections(to: origin).allSatisfy(\.isRetired) })
            let second = try await post(client, origin).status
            #expect(second == 200)
            #expect(server.snapshot.connections == 2)
        }
    }

    @Test("a stream above GOAWAY's last stream is sent again on a fresh connection; later ones go there too")
    func goAway() async throws {
        try await withServer { server, client, origin in
            server.setScript { connection, request in connection == 1 && request == 3 ? .goAwayRefusing : .answer() }
            for _ in 0..<6 {
                let status = try await post(client, origin).status
                #expect(status == 200)
            }
            #expect(server.snapshot.connections == 2)
            #expect(server.snapshot.requests == 7, "the refused request was sent twice")
        }
    }

    @Test("REFUSED_STREAM is retried on a fresh connection; a server that always refuses fails with .refused")
    func refusedStream() async throws {
        try await withServer { server, client, origin in
            server.setScript { connection, _ in connection == 1 ? .refuse : .answer() }
            let status = try await post(client, origin).status
            #expect(status == 200)
            #expect(server.snapshot.connections == 2)
            server.setScript { _, _ in .refuse }
            do throws(HTTP2ClientError) {
                _ = try await post(client, origin)
                Issue.record("a request every connection refuses succeeded")
            } catch {
                #expect(error.code == .refused)
            }
            #expect(server.snapshot.connections == 4, "the first try on connection 2, each retry on a new one")
        }
    }

    @Test("a server that never answers: the request fails at its deadline and its stream is reset")
    func deadline() async throws {
        try await withServer { server, client, origin in
            // Connected first, so the short deadline below is spent on the stream, not the TLS handshake.
            let warm = try await post(client, origin).status
            #expect(warm == 200)
            server.setScript { _, _ in .silence }
            let start = ContinuousClock.now
            // Long enough for the request to reach the server on a loaded machine.
            async let silent: String = {
                do throws(HTTP2ClientError) {
                    return String(try await post(client, origin, timeout: .seconds(2)).status)
                } catch {
                    return error.code.rawValue
                }
            }()
            #expect(await eventually { server.snapshot.requests == 2 }, "the server read the request")
            #expect(await silent == HTTP2ClientError.Code.timedOut.rawValue)
            let elapsed = ContinuousClock.now - start
            #expect(elapsed >= .milliseconds(1990) && elapsed < .seconds(6), "\(elapsed)")
            #expect(
                await eventually { server.snapshot.abandoned == 1 },
                "the server saw the stream reset: \(server.snapshot)")
            server.setScript { _, _ in .answer() }
            let status = try await post(client, origin).status
            #expect(status == 200, "the connection still serves")
            #expect(server.snapshot.connections == 1)
        }
    }

    @Test("never more streams than SETTINGS_MAX_CONCURRENT_STREAMS; more connections open when all are full")
    func streamLimit() async throws {
        try await withServer(maxConcurrentStreams: 2, configure: { $0.maximumConnectionsPerOrigin = 3 }) {
            server, client, origin in
            // Each connection answers its first request at once (the pool opens another only once
            // every open one has answered) and holds the rest until every stream the limits allow
            // is busy (3 connections × 2): the third connection is needed whatever the machine's speed.
            server.setScript { _, request in request == 1 ? .answer() : .held }
            let requests = Task { await burst(client, origin, count: 12) }
            #expect(await eventually { server.heldCount == 6 }, "\(server.snapshot)")
            server.setScript { _, _ in .answer() }
            server.releaseHeld()
            let statuses = await requests.value
            #expect(statuses.allSatisfy { $0 == "200" }, "\(statuses)")
            let statistics = server.snapshot
            #expect(statistics.peakActive.values.allSatisfy { $0 <= 2 }, "\(statistics.peakActive)")
            #expect(statistics.connections == 3)
        }
    }

    @Test("an origin's connections run on different event loops, not all on one thread")
    func spreadOverEventLoops() async throws {
        try await withServer(maxConcurrentStreams: 1, configure: { $0.maximumConnectionsPerOrigin = 2 }) {
            server, client, origin in
            server.setScript { _, _ in .answer(delay: .milliseconds(50)) }
            let statuses = await burst(client, origin, count: 20, timeout: .seconds(30))
            #expect(statuses.allSatisfy { $0 == "200" }, "\(statuses)")
            let loops = client.connections(to: origin).map(\.eventLoop)
            try #require(loops.count == 2)
            let available = Array(MultiThreadedEventLoopGroup.singleton.makeIterator()).count
            #expect(Set(loops).count == min(2, available))
        }
    }

    @Test("a client identity that does not open is invalidConfiguration, without its passphrase")
    func badIdentity() {
        #expect {
            _ = try HTTP2ClientIdentity(pkcs12: Array("not a p12".utf8), passphrase: Array("s3cret-phrase".utf8))
        } throws: { error in
            (error as? HTTP2ClientError)?.code == .invalidConfiguration && !"\(error)".contains("s3cret-phrase")
        }
        #expect {
            _ = try HTTP2Client(configuration: .init(trustRoots: .pem("not a certificate")))
        } throws: { error in
            (error as? HTTP2ClientError)?.code == .invalidConfiguration
        }
    }

    @Test("a request waiting for a stream fails at its deadline; the queue goes on without it")
    func queueDeadline() async throws {
        try await withServer(maxConcurrentStreams: 1, configure: { $0.maximumConnectionsPerOrigin = 1 }) {
            server, client, origin in
            server.setScript { _, request in request == 1 ? .held : .answer() }
            async let first = post(client, origin)
            #expect(await eventually { server.heldCount == 1 })
            async let patient = post(client, origin, timeout: .seconds(20))
            do throws(HTTP2ClientError) {
                _ = try await post(client, origin, timeout: .milliseconds(300))
                Issue.record("a request was served while the only stream was held")
            } catch {
                #expect(error.code == .timedOut, "\(error)")
            }
            server.releaseHeld()
            let firstStatus = try await first.status
            // Handed the stream after the expired waiter left the queue (handing it to that one
            // would resume its continuation twice and crash).
            let patientStatus = try await patient.status
            #expect(firstStatus == 200 && patientStatus == 200)
            #expect(server.snapshot.requests == 2)
        }
    }

    @Test("with one connection allowed, requests beyond the stream limit wait for a free stream")
    func streamLimitQueue() async throws {
        try await withServer(maxConcurrentStreams: 2, configure: { $0.maximumConnectionsPerOrigin = 1 }) {
            server, client, origin in
            server.setScript { _, _ in .answer(delay: .milliseconds(50)) }
            let statuses = await burst(client, origin, count: 8)
            #expect(statuses.allSatisfy { $0 == "200" }, "\(statuses)")
            #expect(server.snapshot.connections == 1)
            #expect(server.snapshot.peakActive.values.allSatisfy { $0 <= 2 })
        }
    }

    @Test("nothing listening: connectionFailed, quickly; a server without h2 is named as such")
    func unreachable() async throws {
        let client = try HTTP2Client()
        let start = ContinuousClock.now
        do throws(HTTP2ClientError) {
            _ = try await post(client, HTTP2Origin(scheme: "https", host: "127.0.0.1", port: 1))
            Issue.record("a request to a closed port succeeded")
        } catch {
            #expect(error.code == .connectionFailed)
        }
        #expect(ContinuousClock.now - start < .seconds(5))
        await client.shutdown()

        let http1 = try await FCMEmulator.start(http2: false)
        let trusting = try HTTP2Client(configuration: .init(trustRootsPEM: [http1.trustRootPEM]))
        let http1Origin = try HTTP2Origin.split(url: http1.baseURL).origin
        do throws(HTTP2ClientError) {
            _ = try await post(trusting, http1Origin)
            Issue.record("an HTTP/1.1-only server answered over HTTP/2")
        } catch {
            #expect(error.code == .connectionFailed)
        }
        await trusting.shutdown()
        try await http1.shutdown()
    }

    @Test("after shutdown requests fail with .shutdown")
    func shutdown() async throws {
        try await withServer { _, client, origin in
            let status = try await post(client, origin).status
            #expect(status == 200)
            await client.shutdown()
            do throws(HTTP2ClientError) {
                _ = try await post(client, origin)
                Issue.record("a request after shutdown succeeded")
            } catch {
                #expect(error.code == .shutdown)
            }
        }
    }

    @Test("URLs split into origin and path; default ports are left out of :authority")
    func urls() throws {
        let (origin, path) = try HTTP2Origin.split(url: "https://fcm.googleapis.com/v1/projects/p/messages:send")
        #expect(origin == HTTP2Origin(host: "fcm.googleapis.com"))
        #expect(origin.authority == "fcm.googleapis.com")
        #expect(path == "/v1/projects/p/messages:send")
        let local = try HTTP2Origin.split(url: "https://127.0.0.1:8443")
        #expect(local.origin.port == 8443 && local.origin.authority == "127.0.0.1:8443" && local.path == "/")
        #expect(throws: HTTP2ClientError.self) { try HTTP2Origin.split(url: "ftp://example.com/") }
        // The authority is kept with the origin and follows every change to it.
        var changed = HTTP2Origin(host: "api.push.apple.com")
        changed.port = 2197
        #expect(changed.authority == "api.push.apple.com:2197")
        changed.host = "::1"
        #expect(changed.authority == "[::1]:2197")
        changed.scheme = "http"
        changed.port = 80
        #expect(changed.authority == "[::1]")
        #expect(
            changed == HTTP2Origin(scheme: "http", host: "::1")
                && changed.hashValue == HTTP2Origin(scheme: "http", host: "::1").hashValue)
    }
}
