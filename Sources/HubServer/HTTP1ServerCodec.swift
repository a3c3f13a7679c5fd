import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The hub's HTTP/1.1 server codec: bytes in, `HTTPRequestPart`s out; `HTTPResponsePart`s in,
/// bytes out. One handler instead of NIO's decoder and encoder, the HTTP types codec and the
/// head guards around them, holding nothing between requests but its state, so a waiting
/// connection costs little (docs/benchmarks.md, "Waiting").
///
/// Reading frames requests as llhttp (Node's parser, strict) does, whatever the TCP segmentation:
/// heads are parsed by ``HTTP1HeadParser`` once they arrived whole (empty lines, CRLF or LF, before
/// a request line are skipped); bodies are framed by `Content-Length` or chunked coding and handed
/// on as slices of what was read. Chunk-size lines are checked byte by byte as llhttp does
/// (hexadecimal size, then extensions `;name`, `;name=token` or `;name="quoted"`, then CRLF);
/// trailer fields are checked as header fields are, then dropped (a `Connection: close` among them
/// closes the connection after the answer, as llhttp does). A bare CR or LF anywhere in chunked
/// framing is refused. A head it refuses — malformed (400), over 80 KiB (431, or 414 when the
/// request line alone is) — becomes a stand-in request carrying ``RequestHeadLimits/marker``,
/// answered by the router with a problem after the answers to earlier requests; the connection
/// closes ``lingering`` after that answer and reads nothing more. A malformed chunked body is an
/// ``HTTP1BodyError`` for the ``RequestDispatcher`` (a 400 for the client), and input is dropped
/// from there on.
///
/// Writing (``HTTP1ResponseWriter``): a response without `Content-Length` or `Transfer-Encoding` (and with a body by its
/// status) is sent chunked, as NIO's encoder did. A HEAD request is handed on as a GET, so it is
/// answered wherever GET is, with the same header fields (`Content-Length` included); its answer,
/// and one whose status has no content, goes without its body whatever the route wrote. A request with
/// `Expect: 100-continue` and a body gets `100 Continue` at once (curl waits a second for it
/// before sending a body).
final class HTTP1ServerCodec: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = ByteBuffer

    /// The longest chunk-size line (size and extensions).
    static let maxChunkLine = 1024
    /// How long a connection whose head was refused stays open for reading after the answer:
    /// closing with unread input sends a TCP reset, which can destroy the answer.
    static let lingering = TimeAmount.seconds(2)

    private enum Reading {
        /// Waiting for a head; `scanned` bytes of ``pending`` hold no end of it.
        case head(scanned: Int)
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkDataEnd
        /// Trailer fields; `bytes` of them were read.
        case trailers(bytes: Int)
        /// A head or body was refused, or a trailer said `Connection: close`: input is dropped.
        case failed
    }

    private var reading = Reading.head(scanned: 0)
    /// Bytes read but not parsed yet: part of a head, a chunk-size line or trailers.
    private var pending: ByteBuffer?
    /// The trailers being read hold `Connection: close`.
    private var trailersClose = false
    /// The requests handed on and the responses written to them.
    private var exchanges = HTTP1Exchanges()
    private var writer = HTTP1ResponseWriter()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .failed = reading { return }
        var buffer = unwrapInboundIn(data)
        if var pending {
            self.pending = nil
            pending.writeBuffer(&buffer)
            buffer = pending
        }
        parse(&buffer, context: context)
        if buffer.readableBytes > 0, !isFailed { pending = buffer }
    }

    private var isFailed: Bool {
        if case .failed = reading { return true }
        return false
    }

    private func parse(_ buffer: inout ByteBuffer, context: ChannelHandlerContext) {
        while true {
            switch reading {
            case .head(let scanned):
                guard readHead(&buffer, scanned: scanned, context: context) else { return }
            case .body(let remaining):
                guard let left = passBody(&buffer, remaining: remaining, context: context) else { return }
                if left == 0 { endRequest(context: context) } else { reading = .body(remaining: left) }
            case .chunkSize:
                switch Self.chunkSizeLine(buffer) {
                case .incomplete:
                    if buffer.readableBytes > Self.maxChunkLine {
                        failBody("A chunk-size line is longer than \(Self.maxChunkLine) bytes.", context: context)
                    }
                    return
                case .invalid(let reason):
                    failBody(reason, context: context)
                    return
                case .complete(let size, let length):
                    buffer.moveReaderIndex(forwardBy: length)
                    trailersClose = false
                    reading = size == 0 ? .trailers(bytes: 0) : .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                guard let left = passBody(&buffer, remaining: remaining, context: context) else { return }
                reading = left == 0 ? .chunkDataEnd : .chunkData(remaining: left)
            case .chunkDataEnd:
                // Checked byte by byte: a wrong byte is refused before the next one arrives.
                let view = buffer.readableBytesView
                if let first = view.first, first != 13 {
                    failBody(
                        "A chunk's data must be followed by CRLF (the chunk is longer than its size).", context: context
                    )
                    return
                }
                guard view.count >= 2 else { return }
                guard view[view.startIndex + 1] == 10 else {
                    failBody("A chunk's data must be followed by CRLF, not a bare CR.", context: context)
                    return
                }
                buffer.moveReaderIndex(forwardBy: 2)
                reading = .chunkSize
            case .trailers(let bytes):
                guard readTrailer(&buffer, bytes: bytes, context: context) else { return }
            case .failed:
                buffer.clear()
                return
            }
        }
    }

    /// Reads a head from `buffer` if it is all there; `false` when more is needed (or it failed).
    private func readHead(_ buffer: inout ByteBuffer, scanned: Int, context: ChannelHandlerContext) -> Bool {
        if scanned == 0 {
            // Empty lines before a request line are skipped (RFC 9112, 2.2), CRLF or a bare LF as
            // llhttp does; a bare CR is not (the head parser refuses it).
            while let first = buffer.readableBytesView.first {
                if first == 10 {
                    buffer.moveReaderIndex(forwardBy: 1)
                } else if first == 13, buffer.readableBytes >= 2,
                    buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) == 10
                {
                    buffer.moveReaderIndex(forwardBy: 2)
                } else {
                    break
                }
            }
            if buffer.readableBytes == 0 || (buffer.readableBytes == 1 && buffer.readableBytesView.first == 13) {
                return false
            }
        }
        guard let end = Self.endOfFields(in: buffer, from: max(0, scanned - 3)) else {
            if buffer.readableBytes > HTTP1HeadParser.maxHeadBytes {
                refuseOversized(buffer, context: context)
                return false
            }
            // A bare CR or LF is refused as it arrives, as llhttp does, rather than when (if ever)
            // a CRLFCRLF follows.
            if let reason = Self.bareLineEnd(in: buffer, from: max(0, scanned - 1)) {
                refuse(.invalid(reason), context: context)
                return false
            }
            reading = .head(scanned: buffer.readableBytes)
            return false
        }
        if end > HTTP1HeadParser.maxHeadBytes {
            refuseOversized(buffer, context: context)
            return false
        }
        let parsed = buffer.withUnsafeReadableBytes {
            HTTP1HeadParser.parse(UnsafeRawBufferPointer(rebasing: $0[..<(end + 2)]))
        }
        buffer.moveReaderIndex(forwardBy: end + 4)
        switch parsed {
        case .failure(let error):
            refuse(error, context: context)
            return false
        case .success(let head):
            // HEAD is answered wherever GET is, with the same header fields and no body (RFC 9110,
            // 9.3.2): the routes see a GET, and the answer's body is dropped here.
            var request = head.request
            let isHead = request.method == .head
            if isHead { request.method = .get }
            exchanges.requestHandedOn(isHead: isHead)
            context.fireChannelRead(wrapInboundOut(.head(request)))
            // `100 Continue` when the client waits for it before its body and no earlier
            // response is still being written (the interim answer would land inside it; the
            // client then sends after its own timeout).
            if head.expectsContinue, head.framing != .none, head.framing != .length(0), exchanges.earlierAnswered {
                context.writeAndFlush(
                    wrapOutboundOut(ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n")), promise: nil)
            }
            switch head.framing {
            case .none, .length(0): endRequest(context: context)
            case .length(let length): reading = .body(remaining: length)
            case .chunked: reading = .chunkSize
            }
            return true
        }
    }

    /// Hands on what `buffer` holds of `remaining` body bytes, as a slice; how many are still to
    /// come, or `nil` when `buffer` held none.
    private func passBody(_ buffer: inout ByteBuffer, remaining: Int, context: ChannelHandlerContext) -> Int? {
        guard buffer.readableBytes > 0 else { return nil }
        let count = min(remaining, buffer.readableBytes)
        context.fireChannelRead(wrapInboundOut(.body(buffer.readSlice(length: count)!)))
        return remaining - count
    }

    /// Reads one trailer line after a last chunk: a field, checked as a header field is and
    /// dropped, or the empty line that ends the request. `false` when more is needed (or it failed).
    private func readTrailer(_ buffer: inout ByteBuffer, bytes: Int, context: ChannelHandlerContext) -> Bool {
        guard let lf = buffer.readableBytesView.firstIndex(of: 10) else {
            if bytes + buffer.readableBytes > HTTP1HeadParser.maxHeadBytes {
                failBody("The trailer fields are larger than \(HTTP1HeadParser.maxHeadBytes) bytes.", context: context)
            }
            return false
        }
        let length = lf - buffer.readerIndex
        guard length >= 1, buffer.getInteger(at: lf - 1, as: UInt8.self) == 13 else {
            failBody("A trailer line ends in a bare LF; lines end in CRLF.", context: context)
            return false
        }
        guard bytes + length + 1 <= HTTP1HeadParser.maxHeadBytes else {
            failBody("The trailer fields are larger than \(HTTP1HeadParser.maxHeadBytes) bytes.", context: context)
            return false
        }
        if length == 1 {
            buffer.moveReaderIndex(forwardBy: 2)
            endRequest(context: context)
            if trailersClose {
                // As llhttp: nothing after a request that said `Connection: close` is read.
                reading = .failed
                pending = nil
                exchanges.closeAfterLastAnswer()
                buffer.clear()
                return false
            }
            return true
        }
        let checked = buffer.withUnsafeReadableBytes {
            HTTP1HeadParser.trailerField(UnsafeRawBufferPointer(rebasing: $0[..<(length - 1)]))
        }
        switch checked {
        case .failure(let error):
            if case .invalid(let reason) = error {
                failBody(reason, context: context)
            } else {
                failBody("A trailer field is not valid.", context: context)
            }
            return false
        case .success(let closes):
            if closes { trailersClose = true }
            buffer.moveReaderIndex(forwardBy: length + 1)
            reading = .trailers(bytes: bytes + length + 1)
            return true
        }
    }

    private func endRequest(context: ChannelHandlerContext) {
        reading = .head(scanned: 0)
        context.fireChannelRead(wrapInboundOut(.end(nil)))
    }

    /// Refuses a head over the limit: 414 when its request line alone is, 431 otherwise.
    private func refuseOversized(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        let lineEnd = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")).map { $0 - buffer.readerIndex }
        refuse((lineEnd ?? Int.max) >= HTTP1HeadParser.maxHeadBytes ? .lineTooLong : .fieldsTooLarge, context: context)
    }

    /// Hands on a stand-in request for a refused head and reads nothing more.
    private func refuse(_ error: HTTP1HeadError, context: ChannelHandlerContext) {
        reading = .failed
        pending = nil
        exchanges.closeAfterLastAnswer()
        exchanges.requestHandedOn(isHead: false)
        let value =
            switch error {
            case .lineTooLong: "414"
            case .fieldsTooLarge: "431"
            case .invalid(let reason): "400 " + reason
            }
        let head = HTTPRequest(
            method: .get, scheme: "http", authority: nil, path: "/",
            headerFields: [RequestHeadLimits.marker: value, .connection: "close"])
        context.fireChannelRead(wrapInboundOut(.head(head)))
        context.fireChannelRead(wrapInboundOut(.end(nil)))
    }

    /// Refuses a malformed body: the ``RequestDispatcher`` answers 400 (or ends the body the
    /// route reads with it); nothing more is read.
    private func failBody(_ reason: String, context: ChannelHandlerContext) {
        reading = .failed
        pending = nil
        context.fireErrorCaught(HTTP1BodyError(reason: reason))
    }

    /// Why the bytes from offset `from` (from the reader index) hold a bare LF, or a CR followed
    /// by anything but LF; `nil` when they do not.
    private static func bareLineEnd(in buffer: ByteBuffer, from: Int) -> String? {
        buffer.withUnsafeReadableBytes { bytes -> String? in
            var index = from
            while index < bytes.count {
                if bytes[index] == 10 && (index == 0 || bytes[index - 1] != 13) {
                    return "A line of the request head ends in a bare LF."
                }
                if bytes[index] == 13 && index + 1 < bytes.count && bytes[index + 1] != 10 {
                    return "A line of the request head ends in a bare CR."
                }
                index += 1
            }
            return nil
        }
    }

    /// The offset, from the reader index, of the CRLFCRLF that ends a head, searching from `from`.
    private static func endOfFields(in buffer: ByteBuffer, from: Int) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            var index = from
            while index + 3 < bytes.count {
                if bytes[index + 3] != 10 {
                    index += bytes[index + 3] == 13 ? 1 : 4
                    continue
                }
                if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 { return index }
                index += 1
            }
            return nil
        }
    }

    // MARK: Writing

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        writer.write(unwrapOutboundIn(data), exchanges: &exchanges, context: context, promise: promise)
    }
}

@available(*, unavailable)
extension HTTP1ServerCodec: Sendable {}

/// A request body that is not valid chunked coding, or one that ended early: the client's fault,
/// answered 400 (the ``RequestDispatcher`` ends the body a route reads with it as an `HTTPError`).
struct HTTP1BodyError: Error, Equatable, Sendable {
    /// What is wrong, for the client.
    var reason: String
}
