import Foundation
import HubTesting
import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection that writes exactly the bytes a test gives it and records everything it
/// receives and when the server closed it: for slow clients, parked long-polls and streams.
final class RawConnection: Sendable {
    private let channel: any Channel
    private let recorder: Recorder

    /// Connects to `127.0.0.1:port`.
    static func open(port: Int) async throws -> RawConnection {
        let recorder = Recorder()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(recorder) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, recorder: recorder)
    }

    private init(channel: any Channel, recorder: Recorder) {
        self.channel = channel
        self.recorder = recorder
    }

    /// Writes `text` as is.
    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// Writes a GET request with the given headers (`Host` is added).
    func get(_ path: String, headers: [String: String] = [:]) async throws {
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        try await send(head + "\r\n")
    }

    /// Everything received so far.
    var received: String { recorder.state.withLock { String(buffer: $0.bytes) } }

    /// When the server closed the connection, if it did.
    var closedAt: ContinuousClock.Instant? { recorder.state.withLock { $0.closedAt } }

    /// Waits until the connection is closed (by either side) or `timeout` passed.
    /// - Returns: whether it is closed.
    @discardableResult
    func waitForClose(timeout: Duration) async -> Bool {
        await eventually(timeout: max(timeout, .zero)) { closedAt != nil }
    }

    /// Waits until `condition` holds for what was received, or `timeout` passed.
    func waitForReceived(timeout: Duration, _ condition: (String) -> Bool) async -> Bool {
        _ = await eventually(timeout: timeout) { condition(received) || closedAt != nil }
        return condition(received)
    }

    /// Closes the connection from this side.
    func close() async {
        try? await channel.close().get()
    }

    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer

        struct State {
            var bytes = ByteBuffer()
            var closedAt: ContinuousClock.Instant?
        }
        let state = Mutex(State())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            state.withLock { state in _ = state.bytes.writeBuffer(&buffer) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLock { $0.closedAt = .now }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
