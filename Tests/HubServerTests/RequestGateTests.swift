import Foundation
import HTTPTypes
import HubTesting
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Synchronization
import Testing

@testable import HubServer

#if canImport(Glibc)
    import Glibc
#endif

/// `RequestGate` (`ConnectionLimits.maxActiveRequests`): at most that many requests run at once,
/// the next ones wait in order; a request whose body is still arriving is not held back.
@Suite("Request gate")
struct RequestGateTests {
    @Test("with a limit of 2, the third and fourth start only as running ones leave, in the order they came")
    func order() {
        let gate = RequestGate(limit: 2)
        let started = Mutex<[Int]>([])
        for number in 1...4 { gate.enter { started.withLock { $0.append(number) } } }
        #expect(started.withLock { $0 } == [1, 2])
        #expect(gate.runningCount == 2)
        #expect(gate.waitingCount == 2)

        gate.leave()
        #expect(started.withLock { $0 } == [1, 2, 3])
        #expect(gate.runningCount == 2)
        #expect(gate.waitingCount == 1)

        gate.leave()
        #expect(started.withLock { $0 } == [1, 2, 3, 4])
        #expect(gate.runningCount == 2)
        #expect(gate.waitingCount == 0)

        // Nobody waits: a leave frees a place.
        gate.leave()
        #expect(gate.runningCount == 1)
        gate.enter { started.withLock { $0.append(5) } }
        #expect(started.withLock { $0 } == [1, 2, 3, 4, 5])
        #expect(gate.runningCount == 2)
        gate.leave()
        gate.leave()
        #expect(gate.runningCount == 0)
        #expect(gate.waitingCount == 0)
    }

    @Test("over real connections, at most maxActiveRequests handlers run at once; the others are answered after")
    func boundsHandlers() async throws {
        let (server, gate) = HTTPServerBuilder.hubHTTP1WithGate(connections: ConnectionLimits(maxActiveRequests: 2))
        #expect(gate.limit == 2)
        let holding = Holding()
        let router = Router()
        router.get("hold") { _, _ -> HTTPResponse.Status in
            await holding.hold()
            return .ok
        }
        let app = Application(router: router, server: server)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            defer { holding.release() }
            let request = Array("GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
            let answers = Task {
                try await withThrowingTaskGroup(of: [Int].self) { group in
                    for _ in 0..<4 {
                        group.addTask { try await RawConnection.exchange(port: port, [request], timeout: 60).statuses }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
            // Two handlers run; the two other requests are parsed and wait at the gate.
            let held = await eventually(timeout: .seconds(30)) { holding.entered == 2 && gate.waitingCount == 2 }
            #expect(held, "entered \(holding.entered), waiting \(gate.waitingCount), running \(gate.runningCount)")
            #expect(holding.inside == 2)
            #expect(gate.runningCount == 2)

            holding.release()
            let statuses = try await answers.value
            #expect(statuses == [200, 200, 200, 200])
            #expect(holding.entered == 4)
            #expect(holding.most == 2, "handlers inside at once: \(holding.most)")
            #expect(await eventually(timeout: .seconds(30)) { gate.runningCount == 0 && gate.waitingCount == 0 })
        }
    }

    @Test("a request whose body is still arriving starts at once, even when every place is taken")
    func streamingBodyIsNotHeld() async throws {
        let (server, gate) = HTTPServerBuilder.hubHTTP1WithGate(connections: ConnectionLimits(maxActiveRequests: 1))
        let holding = Holding()
        let upload = Atomic<Int>(-1)
        let router = Router()
        router.get("hold") { _, _ -> HTTPResponse.Status in
            await holding.hold()
            return .ok
        }
        router.post("upload") { request, _ -> String in
            upload.store(0, ordering: .relaxed)
            var received = 0
            for try await part in request.body {
                received += part.readableBytes
                upload.store(received, ordering: .relaxed)
            }
            return "received \(received)"
        }
        let app = Application(router: router, server: server)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            defer { holding.release() }
            let first = try await holdOne(port: port, holding: holding, gate: gate)

            let socket = try OpenSocket(port: port)
            try socket.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nhello")
            // Its handler runs and reads the first part of the body while the first request holds the place.
            let reading = await eventually(timeout: .seconds(30)) { upload.load(ordering: .relaxed) == 5 }
            #expect(reading, "upload handler read \(upload.load(ordering: .relaxed)) bytes")
            #expect(holding.inside == 1)
            #expect(gate.runningCount == 1)
            #expect(gate.waitingCount == 0)

            try socket.send("world")
            let answer = await socket.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            #expect(answer.hasSuffix("received 10"), "\(answer)")
            #expect(holding.inside == 1)

            holding.release()
            #expect(try await first.value.statuses == [200])
            #expect(await eventually(timeout: .seconds(30)) { gate.runningCount == 0 })
        }
    }
}

extension RequestGateTests {
    @Test("probes and scrapes are never held back: /healthz is answered while every place is taken")
    func probesAreNotHeld() async throws {
        let (server, gate) = HTTPServerBuilder.hubHTTP1WithGate(connections: ConnectionLimits(maxActiveRequests: 1))
        let holding = Holding()
        let router = Router()
        router.get("hold") { _, _ -> HTTPResponse.Status in
            await holding.hold()
            return .ok
        }
        router.get("healthz") { _, _ -> HTTPResponse.Status in .ok }
        router.get("other") { _, _ -> HTTPResponse.Status in .ok }
        let app = Application(router: router, server: server)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            defer { holding.release() }
            let first = try await holdOne(port: port, holding: holding, gate: gate)
            let probe = try await RawConnection.exchange(
                port: port, [Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)],
                timeout: 10)
            #expect(probe.statuses == [200], "\(probe.text)")
            // Any other route waits for the place.
            let other = Task {
                try await RawConnection.exchange(
                    port: port, [Array("GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)],
                    timeout: 60)
            }
            #expect(await eventually(timeout: .seconds(30)) { gate.waitingCount == 1 })
            holding.release()
            #expect(try await first.value.statuses == [200])
            #expect(try await other.value.statuses == [200])
        }
    }
}

/// Sends `GET /hold` on a connection of its own and waits until its handler holds the gate's only
/// place; the task ends with that request's answer.
private func holdOne(port: Int, holding: Holding, gate: RequestGate) async throws -> Task<RawConnection, any Error> {
    let first = Task {
        try await RawConnection.exchange(
            port: port, [Array("GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)], timeout: 60)
    }
    #expect(await eventually(timeout: .seconds(30)) { holding.inside == 1 && gate.runningCount == 1 })
    return first
}

/// A route that holds every request until the test releases them, counting how many are inside.
final class Holding: Sendable {
    private struct State {
        var inside = 0
        var most = 0
        var entered = 0
    }
    private let state = Mutex(State())
    private let door = Gate()

    /// Waits inside the route until ``release()``.
    func hold() async {
        state.withLock { state in
            state.inside += 1
            state.entered += 1
            state.most = max(state.most, state.inside)
        }
        await door.pass()
        state.withLock { $0.inside -= 1 }
    }

    /// Lets every held request (and every later one) go on.
    func release() { door.open() }

    /// Requests inside the route now.
    var inside: Int { state.withLock { $0.inside } }
    /// The most requests inside at once so far.
    var most: Int { state.withLock { $0.most } }
    /// Requests that entered the route so far.
    var entered: Int { state.withLock { $0.entered } }
}

/// A client connection the test writes to piece by piece, then reads until the server closes it.
final class OpenSocket: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = try RawHTTP.connectedSocket(port: port, timeout: 60)
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw RawHTTP.Failure(description: "send() failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Everything the server sends until it closes the connection (or the socket's timeout).
    func readToEnd() async -> String { await read(until: nil) }

    /// What the server sends until `marker` arrived (the rest stays to be read), or without one
    /// until it closes the connection; either way at most until the socket's timeout.
    func read(until marker: String?) async -> String {
        let fd = self.fd
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    received += buffer[..<count]
                    if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
                }
                continuation.resume(returning: String(decoding: received, as: UTF8.self))
            }
        }
    }
}
