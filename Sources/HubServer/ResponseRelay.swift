import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Carries one response's parts from its route to the channel, in one of two ways, whichever
/// comes first:
/// - **at once**: the route returned, so every part is known; they go to the event loop in one
///   hop (head, body, end) and the end is flushed. Almost every response goes this way;
/// - **streamed**: the route is still writing after ``streamingDelay`` (a streamed body, or a
///   slow route): a second task of the request forwards and flushes the parts as they are
///   written, waiting only while the channel is not writable. (Before, parts were flushed only
///   with the end, so a streamed body, such as server-sent events outside the parked path,
///   reached the client only when it ended.)
///
/// Before, every response was streamed: a task group and a second task per request, woken for
/// each part, were ~20% of the task pool's CPU for `GET /healthz` and a few percent of a
/// publish's (docs/benchmarks.md, "Whole path").
///
/// `done` runs once, on the channel's event loop, when the end was written (`true`), or when the
/// response could not be written whole (`false`).
final class ResponseRelay: Sendable {
    /// How long a route may take before what it wrote streams.
    static let streamingDelay = TimeAmount.milliseconds(100)

    let writer: NIOAsyncChannelOutboundWriter<HTTPResponsePart>
    /// Taken once: by ``respond(to:responder:logger:)`` when the route returned, or by ``stream()``.
    private let sink: Mutex<NIOAsyncChannelOutboundWriter<HTTPResponsePart>.TestSink?>
    private let channel: any Channel
    private let done: @Sendable (Bool) -> Void

    init(channel: any Channel, done: @escaping @Sendable (Bool) -> Void) {
        let (writer, sink) = NIOAsyncChannelOutboundWriter<HTTPResponsePart>.makeTestingWriter()
        self.writer = writer
        self.sink = Mutex(sink)
        self.channel = channel
        self.done = done
    }

    private func take() -> NIOAsyncChannelOutboundWriter<HTTPResponsePart>.TestSink? {
        sink.withLock { sink in
            defer { sink = nil }
            return sink
        }
    }

    /// Runs the responder for `request`; writes its parts at once unless they stream already.
    func respond(to request: Request, responder: HTTPChannelHandler.Responder, logger: Logger) async {
        do {
            try await responder(request, ResponseWriter(outbound: writer), channel)
        } catch {
            logger.trace("Failed to write a response: \(error)")
        }
        writer.finish()
        guard let sink = take() else { return }
        // Every part is buffered and the writer finished: this loop does not wait.
        var parts: [HTTPResponsePart] = []
        for await part in sink { parts.append(part) }
        let channel = self.channel
        let done = self.done
        let written = parts
        channel.eventLoop.execute {
            for part in written {
                guard case .end = part else {
                    channel.write(part, promise: nil)
                    continue
                }
                Self.writeEnd(part, to: channel, done: done)
                return
            }
            channel.flush()
            done(false)
        }
    }

    /// The route is still writing: forwards its parts as they come, from a task of their own.
    func stream() {
        guard let sink = take() else { return }
        let channel = self.channel
        let done = self.done
        Task {
            var failed = false
            var reported = false
            for await part in sink where !failed && !reported {
                switch part {
                case .head, .body:
                    // Flushed part by part: a streamed body is read as it is written.
                    if channel.isWritable {
                        channel.writeAndFlush(part, promise: nil)
                    } else {
                        do { try await channel.writeAndFlush(part) } catch { failed = true }
                    }
                case .end:
                    reported = true
                    Self.writeEnd(part, to: channel, done: done)
                }
            }
            if !reported { done(false) }
        }
    }

    /// Writes and flushes the response's end; `done` says whether it was written.
    private static func writeEnd(
        _ end: HTTPResponsePart, to channel: any Channel, done: @escaping @Sendable (Bool) -> Void
    ) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { result in
            if case .success = result { done(true) } else { done(false) }
        }
        channel.writeAndFlush(end, promise: written)
    }
}
