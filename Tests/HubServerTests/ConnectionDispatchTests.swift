import Foundation
import Testing

@testable import HubServer

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/1.1 over one connection as the hub's `RequestDispatcher` serves it (a connection has no
/// task of its own; each request runs in a task of its own): pipelining order, bodies the route
/// did not read, bodies that arrive after their head, malformed bodies and half-closes.
@Suite("Connection dispatch")
struct ConnectionDispatchTests {
    @Test("pipelined requests are answered in order; `Connection: close` closes after its answer")
    func pipelining() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let requests =
                "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(requests.utf8)])
            #expect(answer.statuses == [200, 404, 200], "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
    }

    @Test("a body the route did not read is read and dropped; the next request is answered")
    func unreadBodies() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let large = String(repeating: "x", count: 200_000)
            let lengthDelimited =
                "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: \(large.utf8.count)\r\n\r\n\(large)"
            let chunk = String(repeating: "y", count: 4096)
            let chunked =
                "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(repeating: "1000\r\n\(chunk)\r\n", count: 20) + "0\r\n\r\n"
            let last = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let answer = try await RawConnection.exchange(
                port: port, [Array((lengthDelimited + chunked + last).utf8)])
            #expect(answer.statuses == [405, 405, 200], "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
    }

    @Test("a body that arrives after its head streams to the route")
    func lateBody() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let body = notification("late-1")
            let head =
                "POST /v1/apps/\(Harness.notes)/users/alice/notifications HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer \(Harness.notesKey)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let half = body.utf8.count / 2
            let answer = try await RawConnection.exchange(
                port: port,
                [Array(head.utf8), Array(body.utf8.prefix(half)), Array(body.utf8.dropFirst(half))])
            #expect(answer.statuses == [201], "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
    }

    @Test("a malformed body gets 400 and the connection closes")
    func malformedBody() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let request =
                "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot a chunk\r\n"
            let answer = try await RawConnection.exchange(port: port, [Array(request.utf8)])
            #expect(answer.statuses.first == 400, "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
    }

    @Test("a client that half-closes after its request still gets the answer, then the connection closes")
    func halfClose() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let answer = try await RawConnection.exchange(
                port: port, [Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)], halfClose: true)
            #expect(answer.statuses == [200], "\(answer.text.prefix(600))")
            #expect(answer.closed)
        }
    }
}

/// Everything a server answers on one connection, until it closes it (or a timeout).
struct RawConnection: Sendable {
    var text: String
    var closed: Bool

    /// The status codes of the responses, in order.
    var statuses: [Int] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    /// Sends `writes` to 127.0.0.1:`port`, 200 ms apart, half-closes when `halfClose`, and reads
    /// until the server closes or `timeout` seconds passed.
    static func exchange(
        port: Int, _ writes: [[UInt8]], halfClose: Bool = false, timeout: Int = 10
    ) async throws -> RawConnection {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try blocking(port: port, writes, halfClose: halfClose, timeout: timeout) })
            }
        }
    }

    private static func blocking(
        port: Int, _ writes: [[UInt8]], halfClose: Bool, timeout: Int
    ) throws -> RawConnection {
        let fd = try RawHTTP.connectedSocket(port: port, timeout: timeout)
        defer { close(fd) }
        for (index, bytes) in writes.enumerated() {
            // Real time on purpose: a pause makes the writes separate reads at the server (a body
            // after its head); it paces the client, it does not wait for a condition.
            if index > 0 { usleep(200_000) }
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                offset += sent
            }
        }
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno == ECONNRESET) {
                closed = true
                break
            }
            if count < 0 { break }
            received += buffer[..<count]
        }
        return RawConnection(text: String(decoding: received, as: UTF8.self), closed: closed)
    }
}
