import NIOCore
import NIOHTTP2
import NIOTLS

/// State the handlers of one connection share, on its event loop only.
final class HTTP2ConnectionShared {
    /// When bytes were last read or written (for the idle PING).
    var lastIO = NIODeadline.now()
    /// Why the connection is closing, when a handler knows better than "closed".
    var failure: HTTP2ClientError?
    /// The last stream ID of a GOAWAY: the server did not process streams above it.
    var goAwayLastStreamID: HTTP2StreamID?

    /// Whether `stream` was dropped by a GOAWAY unprocessed (NIO closes those with `CANCEL`).
    func wasRefusedByGoAway(_ stream: HTTP2StreamID) -> Bool {
        goAwayLastStreamID.map { stream > $0 } ?? false
    }
}

/// Between TLS (or the socket) and `NIOHTTP2Handler`: checks that ALPN chose `h2`, stamps I/O for
/// the idle check, and turns all flushes of one event-loop tick into one, so concurrent streams share
/// TLS records and `write` calls.
final class HTTP2WireHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let shared: HTTP2ConnectionShared
    private let origin: HTTP2Origin
    private let expectsALPN: Bool
    private var flushQueued = false

    init(shared: HTTP2ConnectionShared, origin: HTTP2Origin, expectsALPN: Bool) {
        self.shared = shared
        self.origin = origin
        self.expectsALPN = expectsALPN
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if expectsALPN, case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
            shared.failure = HTTP2ClientError(
                .connectionFailed, "\(origin) does not offer HTTP/2 (ALPN chose \(negotiated ?? "nothing"))")
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Stamped once per batch of reads rather than per read.
    func channelReadComplete(context: ChannelHandlerContext) {
        shared.lastIO = .now()
        context.fireChannelReadComplete()
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushQueued else { return }
        flushQueued = true
        // Runs after the tasks already queued on this loop: other streams' writes join this flush.
        context.eventLoop.assumeIsolated().execute { self.flushNow(context: context) }
    }

    private func flushNow(context: ChannelHandlerContext) {
        flushQueued = false
        shared.lastIO = .now()
        context.flush()
    }
}

/// After ``HTTP2Streams``, sees the connection's own frames (stream 0).
///
/// - The first SETTINGS completes `settings` with `MAX_CONCURRENT_STREAMS` (`Int.max` when absent);
///   later changes are reported. A connection that closes first fails it.
/// - GOAWAY is reported; the pool then opens no new streams here.
/// - Every `pingInterval`, a connection without I/O for that long gets a PING; without an ACK within
///   `pingTimeout` it is closed, so no request is sent into a dead connection.
final class HTTP2ConnectionMonitor: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let shared: HTTP2ConnectionShared
    private let settings: EventLoopPromise<Int>
    private let pingInterval: TimeAmount
    private let pingTimeout: TimeAmount
    private let report: (HTTP2ConnectionEvent) -> Void
    private var settled = false
    private var idleCheck: Scheduled<Void>?
    private var unansweredPing: Scheduled<Void>?
    private var reportedClosing = false

    init(
        shared: HTTP2ConnectionShared, settings: EventLoopPromise<Int>, pingInterval: TimeAmount,
        pingTimeout: TimeAmount, report: @escaping (HTTP2ConnectionEvent) -> Void
    ) {
        self.shared = shared
        self.settings = settings
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.report = report
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let parameters)):
            let limit = parameters.last { $0.parameter == .maxConcurrentStreams }?.value
            if !settled {
                settled = true
                settings.succeed(limit ?? Int.max)
                startIdleChecks(context: context)
            } else if let limit {
                report(.streamLimit(limit))
            }
        case .goAway(_, let code, let debugData):
            // HTTP2Streams recorded the last stream ID on its way here.
            report(.goAway(Self.describe(code, debugData)))
        case .ping(_, ack: true):
            unansweredPing?.cancel()
            unansweredPing = nil
        default:
            break
        }
    }

    /// Checks for idleness every `pingInterval` until the connection closes.
    private func startIdleChecks(context: ChannelHandlerContext) {
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(in: pingInterval) { [weak self] in
            guard let self, idleCheck != nil else { return }
            checkIdle(context: context)
            startIdleChecks(context: context)
        }
    }

    private func checkIdle(context: ChannelHandlerContext) {
        // A tick may come a little early; 90 % of the interval without I/O counts as idle.
        let idle = NIODeadline.now() - shared.lastIO >= .nanoseconds(pingInterval.nanoseconds / 10 * 9)
        guard unansweredPing == nil, idle else { return }
        let ping = HTTP2Frame(
            streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 0x6875_6232), ack: false))
        context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
        unansweredPing = context.eventLoop.assumeIsolated().scheduleTask(in: pingTimeout) { [weak self] in
            self?.shared.failure = HTTP2ClientError(.connectionLost, "the server did not answer a PING")
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if shared.failure == nil {
            shared.failure = HTTP2ClientError(
                .connectionLost, "the connection failed", underlying: error)
        }
        closing()
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closing()
    }

    /// A GOAWAY's code and its debug data (such as APNs' `{"reason":"Shutdown"}`) for logs.
    static func describe(_ code: HTTP2ErrorCode, _ debugData: ByteBuffer?) -> String {
        guard let debugData, debugData.readableBytes > 0 else { return "\(code)" }
        return "\(code) \(String(decoding: debugData.readableBytesView.prefix(256), as: UTF8.self))"
    }

    /// Stops the timers, fails a pending `settings`, and tells the pool once.
    private func closing() {
        idleCheck?.cancel()
        idleCheck = nil
        unansweredPing?.cancel()
        unansweredPing = nil
        let failure = shared.failure ?? HTTP2ClientError(.connectionLost, "the connection closed")
        settings.fail(failure)
        if !reportedClosing {
            reportedClosing = true
            report(.closing(shared.failure))
        }
    }
}
