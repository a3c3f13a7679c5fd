import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The writing half of ``HTTP1ServerCodec``: `HTTPResponsePart`s in, bytes out.
///
/// A response without `Content-Length` or `Transfer-Encoding` (and with a body by its status) is
/// sent chunked, as NIO's encoder did. The answer to a HEAD request (handed on as a GET), and one
/// whose status has no content, goes without its body whatever the route wrote. After the answer
/// to the last request of a connection that is to close (``HTTP1Exchanges``), the connection
/// closes ``HTTP1ServerCodec/lingering`` later.
struct HTTP1ResponseWriter {
    /// How the body of the response being written goes out.
    private enum Body {
        case asIs
        case chunked
        /// A response to HEAD, or one whose status has no content (1xx, 204, 304): none is sent.
        case dropped
    }

    private var body = Body.asIs

    /// Writes `part` to `context` as bytes; `exchanges` learns which request it answers.
    mutating func write(
        _ part: HTTPResponsePart, exchanges: inout HTTP1Exchanges, context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>?
    ) {
        switch part {
        case .head(let response):
            var buffer = context.channel.allocator.buffer(capacity: 256)
            buffer.writeString("HTTP/1.1 \(response.status.code) \(response.status.reasonPhrase)\r\n")
            Self.write(response.headerFields, to: &buffer)
            let code = response.status.code
            if exchanges.responseStarted() || (100..<200).contains(code) || code == 204 || code == 304 {
                body = .dropped
            } else if let encoding = response.headerFields.value(.transferEncoding) {
                body = encoding.lowercased().contains("chunked") ? .chunked : .asIs
            } else if response.headerFields.value(.contentLength) == nil {
                body = .chunked
                buffer.writeStaticString("Transfer-Encoding: chunked\r\n")
            } else {
                body = .asIs
            }
            buffer.writeStaticString("\r\n")
            context.write(NIOAny(buffer), promise: promise)
        case .body(let part):
            writeBody(part, context: context, promise: promise)
        case .end(let trailers):
            var buffer = ByteBuffer()
            if case .chunked = body {
                buffer.writeStaticString("0\r\n")
                Self.write(trailers ?? [:], to: &buffer)
                buffer.writeStaticString("\r\n")
            }
            body = .asIs
            guard exchanges.responseEnded() else {
                context.write(NIOAny(buffer), promise: promise)
                return
            }
            // The answer to the last request of a connection that closes (a refused head, say):
            // the connection closes a little after it went.
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in
                channel.eventLoop.scheduleTask(in: HTTP1ServerCodec.lingering) { channel.close(promise: nil) }
            }
            written.futureResult.cascade(to: promise)
            context.write(NIOAny(buffer), promise: written)
        }
    }

    private func writeBody(_ part: ByteBuffer, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        if case .dropped = body {
            context.write(NIOAny(ByteBuffer()), promise: promise)
            return
        }
        guard case .chunked = body, part.readableBytes > 0 else {
            context.write(NIOAny(part), promise: promise)
            return
        }
        let size = String(part.readableBytes, radix: 16)
        if part.readableBytes <= 4096 {
            var frame = context.channel.allocator.buffer(capacity: size.utf8.count + part.readableBytes + 4)
            frame.writeString(size)
            frame.writeStaticString("\r\n")
            frame.writeImmutableBuffer(part)
            frame.writeStaticString("\r\n")
            context.write(NIOAny(frame), promise: promise)
        } else {
            context.write(NIOAny(ByteBuffer(string: size + "\r\n")), promise: nil)
            context.write(NIOAny(part), promise: nil)
            context.write(NIOAny(ByteBuffer(staticString: "\r\n")), promise: promise)
        }
    }

    /// Writes `fields` as field lines, each ending in CRLF (HTTP types keeps CR and LF out of them).
    private static func write(_ fields: HTTPFields, to buffer: inout ByteBuffer) {
        for field in fields {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
    }
}
