import Foundation
import HubTesting
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HubServer

/// A connection of the hub's server has no task of its own (docs/benchmarks.md, "Waiting"): Hummingbird's
/// server gives each connection a task that runs `handle(value:)`, and the hub's returns at once.
@Suite("Taskless connections")
struct TasklessConnectionTests {
    /// Counts the connections whose task (`handle(value:)`) has returned.
    struct Counting: ServerChildChannel {
        let inner: GuardedHTTP1Channel
        let returned: SharedCounter

        func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<GuardedHTTP1Channel.Value> {
            inner.setup(channel: channel, logger: logger)
        }

        func handle(value: GuardedHTTP1Channel.Value, logger: Logger) async {
            await inner.handle(value: value, logger: logger)
            returned.value.add(1, ordering: .relaxed)
        }
    }

    @Test("the task of a connection that sent nothing has ended, and the connection still answers")
    func noTaskPerConnection() async throws {
        let logger = Logger(label: "test")
        let registry = ConnectionRegistry(limits: ConnectionLimits(), trustedProxies: [], logger: logger)
        let guarded = GuardedHTTP1Channel(
            responder: { _, writer, _ in
                let writer = writer
                try await writer.writeResponse(.init(status: .noContent))
            }, registry: registry, gate: RequestGate(limit: 256))
        let returned = SharedCounter()
        let port = Mutex<Int?>(nil)
        let server = Counting(inner: guarded, returned: returned).server(
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } },
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger)
        let running = Task { try await server.run() }
        defer { running.cancel() }
        _ = await eventually { port.withLock { $0 } != nil }
        let serverPort = try #require(port.withLock { $0 })

        // Five silent connections: every task but the server's one keeper returns while they are open.
        let silent = try (0..<5).map { _ in try SilentSocket(port: serverPort) }
        _ = await eventually { returned.value.load(ordering: .relaxed) >= 4 }
        let ended = returned.value.load(ordering: .relaxed)
        #expect(ended == 4, "connection tasks still running for silent connections")

        // A silent connection is still served.
        let answer = try await RawConnection.exchange(
            port: serverPort, [Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)])
        #expect(answer.statuses == [204], "\(answer.text)")
        withExtendedLifetime(silent) {}
    }
}

/// An atomic counter to share.
final class SharedCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// A connected TCP socket that sends nothing; closed when released.
final class SilentSocket: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = try RawHTTP.connectedSocket(port: port)
    }

    deinit { close(fd) }
}
