import HummingbirdCore
import Logging
import NIOCore

/// The hub's HTTP/1.1 child channel: Hummingbird's ``HTTP1Channel`` behind a ``ConnectionGuard``
/// that counts the connection in (or refuses it) and enforces the ``ConnectionLimits`` timeouts,
/// with a ``ParkingHandler`` for requests that wait without a task.
///
/// What a waiting connection costs is kept small (README, "Waiting"):
/// - each request runs in a child task of the connection's task, so the async frames of its
///   handling are freed when it ends (a task keeps the memory of its deepest stack until it ends,
///   and a connection's task lives as long as the connection);
/// - the receive buffer starts at 512 bytes (a request head's size) instead of NIO's 2 KiB and
///   grows for connections that read more (publishes).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let registry: ConnectionRegistry

    init(responder: @escaping HTTPChannelHandler.Responder, registry: ConnectionRegistry) {
        // Hummingbird's own idle timeout stays off: it restarts with every body part, so a
        // trickled body would never be cut, and it does not tell a slow head from an idle connection.
        self.inner = HTTP1Channel(
            responder: Self.inChildTask(responder),
            configuration: .init(additionalChannelHandlers: [RequestHeadGuard(), RequestPhaseHandler()]))
        self.registry = registry
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(registry: registry))
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // After Hummingbird's connection state handler, so it sees only real responses.
            let operations = channel.pipeline.syncOperations
            let state = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(ParkingHandler(), position: .after(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }

    /// `responder`, run in a child task per request.
    private static func inChildTask(
        _ responder: @escaping HTTPChannelHandler.Responder
    ) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            let box = WriterBox(writer)
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await responder(request, box.take(), channel) }
            }
        }
    }
}

/// Carries a connection's (non-copyable) response writer into the task that answers a request.
private final class WriterBox: @unchecked Sendable {
    private var writer: ResponseWriter?

    init(_ writer: consuming ResponseWriter) { self.writer = consume writer }

    /// The writer; once. The box goes to one child task, which takes it before anything else.
    func take() -> ResponseWriter { writer.take()! }
}
