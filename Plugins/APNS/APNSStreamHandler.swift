import NIOCore
import NIOHPACK
import NIOHTTP2

/// What APNs answered to one request, read off its stream.
struct APNSHTTPResponse: Sendable {
    var status: Int
    var apnsID: String?
    /// `apns-unique-id`, sent by the development environment only.
    var uniqueID: String?
    var retryAfter: String?
    var body: [UInt8]
}

/// Why a stream ended without an answer.
enum APNSStreamFailure: Error, Sendable, CustomStringConvertible {
    /// The server refused the stream (`REFUSED_STREAM`, or above a GOAWAY's last stream ID): it was
    /// not processed, so sending it again elsewhere cannot duplicate it.
    case refused
    /// The deadline passed before the answer was complete; the stream was reset.
    case timedOut
    /// The stream or its connection ended first; APNs may or may not have processed it.
    case lost(any Error)

    var description: String {
        switch self {
        case .refused: "the stream was refused by APNs before being processed"
        case .timedOut: "no answer before the request timeout"
        case .lost(let error): "the stream ended without an answer (\(error))"
        }
    }

    init(_ error: any Error) {
        if let failure = error as? APNSStreamFailure {
            self = failure
        } else if let closed = error as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .refusedStream {
            self = .refused
        } else if error is NIOHTTP2Errors.CreatedStreamAfterGoaway {
            self = .refused
        } else {
            self = .lost(error)
        }
    }
}

/// Sends one request on its own HTTP/2 stream and completes `promise` with the answer.
///
/// The request goes out as one HEADERS and one DATA frame with END_STREAM. The answer is complete at
/// END_STREAM. If `deadline` passes first the stream is reset (`RST_STREAM CANCEL`) and the promise
/// fails with ``APNSStreamFailure/timedOut``: no request can hang.
final class APNSStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let headers: HPACKHeaders
    private let body: ByteBuffer
    private let deadline: NIODeadline
    private let promise: EventLoopPromise<APNSHTTPResponse>
    private var responseHeaders: HPACKHeaders?
    private var responseBody: [UInt8] = []
    private var timeout: Scheduled<Void>?
    private var sent = false
    private var finished = false

    init(headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline, promise: EventLoopPromise<APNSHTTPResponse>) {
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.fail(.timedOut)
            channel.close(promise: nil)
        }
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    private func send(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if responseHeaders == nil, let status = frame.headers.first(name: ":status"), status.hasPrefix("1") {
                break  // An informational answer; the real one follows.
            } else if responseHeaders == nil {
                responseHeaders = frame.headers
            }
            if frame.endStream { complete() }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data, let bytes = buffer.readBytes(length: buffer.readableBytes) {
                responseBody.append(contentsOf: bytes)
            }
            if frame.endStream { complete() }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(APNSStreamFailure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.lost(ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    private func complete() {
        guard !finished else { return }
        finished = true
        timeout?.cancel()
        let headers = responseHeaders ?? HPACKHeaders()
        guard let status = headers.first(name: ":status").flatMap(Int.init) else {
            promise.fail(APNSStreamFailure.lost(NIOHTTP2Errors.missingPseudoHeader(":status")))
            return
        }
        promise.succeed(
            APNSHTTPResponse(
                status: status, apnsID: headers.first(name: "apns-id"), uniqueID: headers.first(name: "apns-unique-id"),
                retryAfter: headers.first(name: "retry-after"), body: responseBody))
    }

    private func fail(_ failure: APNSStreamFailure) {
        guard !finished else { return }
        finished = true
        timeout?.cancel()
        promise.fail(failure)
    }
}
