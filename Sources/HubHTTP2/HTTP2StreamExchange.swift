import NIOCore
import NIOHPACK
import NIOHTTP2

/// How one stream ended without a response, before it is mapped to an ``HTTP2ClientError``.
enum HTTP2StreamEnd: Error, Sendable {
    /// Not processed by the server (`REFUSED_STREAM`, dropped by GOAWAY, or never opened).
    case refused(any Error & Sendable)
    case timedOut
    case tooLarge(Int)
    case lost(any Error & Sendable)
}

/// Runs one request/response exchange on its own stream channel.
///
/// Writes HEADERS and one DATA frame with END_STREAM as soon as the stream is active, collects the
/// response until END_STREAM, and completes `result`. At `deadline` it fails with
/// ``HTTP2StreamEnd/timedOut`` and closes the stream, which resets it (`RST_STREAM CANCEL`).
final class HTTP2StreamExchange: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let requestHeaders: HPACKHeaders
    private let requestBody: ByteBuffer
    private let deadline: NIODeadline
    private let bodyLimit: Int
    private let connection: HTTP2ConnectionShared
    private let result: EventLoopPromise<HTTP2Response>
    private var head: HPACKHeaders?
    private var body: ByteBuffer?
    private var timer: Scheduled<Void>?
    private var written = false
    private var done = false

    init(
        headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline, bodyLimit: Int,
        connection: HTTP2ConnectionShared, result: EventLoopPromise<HTTP2Response>
    ) {
        self.connection = connection
        self.requestHeaders = headers
        self.requestBody = body
        self.deadline = deadline
        self.bodyLimit = bodyLimit
        self.result = result
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let stream = context.channel
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.finish(.failure(.timedOut))
            stream.close(promise: nil)
        }
        if stream.isActive { writeRequest(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        writeRequest(context: context)
        context.fireChannelActive()
    }

    private func writeRequest(context: ChannelHandlerContext) {
        if written { return }
        written = true
        let empty = requestBody.readableBytes == 0
        context.write(wrapOutboundOut(.headers(.init(headers: requestHeaders, endStream: empty))), promise: nil)
        if !empty {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(requestBody), endStream: true))), promise: nil)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if head == nil {
                // 1xx answers are interim; the final head follows. Later HEADERS are trailers.
                let interim = frame.headers.first(name: ":status")?.first == "1"
                if !interim { head = frame.headers }
            }
            if frame.endStream { complete(context: context) }
        case .data(let frame):
            if case .byteBuffer(var chunk) = frame.data, chunk.readableBytes > 0 {
                let size = (body?.readableBytes ?? 0) + chunk.readableBytes
                guard size <= bodyLimit else {
                    finish(.failure(.tooLarge(bodyLimit)))
                    context.close(promise: nil)
                    return
                }
                if body == nil {
                    body = chunk
                } else {
                    body!.writeBuffer(&chunk)
                }
            }
            if frame.endStream { complete(context: context) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(unprocessed(error) ? .refused(error) : .lost(error)))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ended))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(ended))
    }

    /// Whether `error` proves the server never processed the stream: `REFUSED_STREAM`, a stream
    /// above a GOAWAY's last stream ID (NIO closes those with `CANCEL`), or one opened after GOAWAY.
    private func unprocessed(_ error: any Error) -> Bool {
        if error is NIOHTTP2Errors.CreatedStreamAfterGoaway { return true }
        guard let closed = error as? NIOHTTP2Errors.StreamClosed else { return false }
        return closed.errorCode == .refusedStream || connection.wasRefusedByGoAway(closed.streamID)
    }

    /// A stream that closes before the request was written never reached the server.
    private var ended: HTTP2StreamEnd {
        written ? .lost(ChannelError.ioOnClosedChannel) : .refused(ChannelError.ioOnClosedChannel)
    }

    private func complete(context: ChannelHandlerContext) {
        guard let status = head?.first(name: ":status").flatMap({ Int($0) }) else {
            finish(.failure(.lost(NIOHTTP2Errors.missingPseudoHeader(":status"))))
            context.close(promise: nil)
            return
        }
        finish(.success(HTTP2Response(status: status, headers: head!, body: body ?? ByteBuffer())))
    }

    private func finish(_ outcome: Result<HTTP2Response, HTTP2StreamEnd>) {
        if done { return }
        done = true
        timer?.cancel()
        timer = nil
        result.completeWith(outcome.mapError { $0 as any Error })
    }
}
