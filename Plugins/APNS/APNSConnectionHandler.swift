import NIOCore
import NIOHTTP2
import Synchronization

import struct Foundation.Data
import class Foundation.JSONDecoder

/// What a connection tells its pool. Called on the connection's event loop.
protocol APNSConnectionDelegate: AnyObject, Sendable {
    /// The server announced a new `SETTINGS_MAX_CONCURRENT_STREAMS`.
    func connection(_ id: Int, didChangeMaxConcurrentStreams maximum: Int)
    /// The server sent GOAWAY: no new streams on this connection; in-flight ones may finish.
    func connection(_ id: Int, didReceiveGoAway reason: String?)
    /// The connection failed or is closing (error, unanswered PING, peer closed): no new streams.
    func connectionIsClosing(_ id: Int, reason: (any Error)?)
}

/// The last stream ID of the GOAWAY a connection received, if any. Streams above it were not
/// processed by the server (NIO closes them with `CANCEL`), so they can be sent again elsewhere.
final class APNSGoAwayRecord: Sendable {
    private let lastStreamID = Atomic<Int32>(Int32.max)

    func received(lastStreamID id: HTTP2StreamID) {
        lastStreamID.store(Int32(id), ordering: .sequentiallyConsistent)
    }

    /// Whether a GOAWAY came: no new streams on this connection.
    var isReceived: Bool { lastStreamID.load(ordering: .sequentiallyConsistent) != Int32.max }

    /// Whether the server said it never processed `stream`.
    func refused(_ stream: HTTP2StreamID) -> Bool {
        Int32(stream) > lastStreamID.load(ordering: .sequentiallyConsistent)
    }
}

/// When the connection last read or wrote bytes; shared by the handlers of one connection, on its loop.
final class APNSIOActivity {
    var last = NIODeadline.now()
}

/// Watches the connection-level frames (stream 0) of an APNs connection, after `NIOHTTP2Handler`.
///
/// - The first SETTINGS completes ``ready`` with the server's stream limit (absent = unlimited);
///   every SETTINGS that carries `MAX_CONCURRENT_STREAMS` is passed to the delegate.
/// - GOAWAY is passed to the delegate with the `reason` of its JSON debug data.
/// - Once the connection is up, without traffic for `pingInterval` it sends a PING; no ACK within `pingTimeout` closes the
///   connection, so the pool opens a fresh one instead of sending into a dead one.
/// - A server that does not speak HTTP/2 (no ALPN `h2`) never sends SETTINGS: ``ready`` fails when
///   the connection errors or closes, or the connect deadline closes it.
final class APNSConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    let ready: EventLoopPromise<Int>
    private let id: Int
    private let delegate: any APNSConnectionDelegate
    private let activity: APNSIOActivity
    private let pingInterval: TimeAmount
    private let pingTimeout: TimeAmount
    private var pingCheck: Scheduled<Void>?
    private var pingExpiry: Scheduled<Void>?
    /// Why the connection closed, when it was not a clean close.
    private(set) var closeReason: (any Error)?
    /// Set once the connection is being closed: no more PINGs.
    private var closing = false
    /// Shared with the ``APNSConnection``: the last stream ID of a GOAWAY.
    private let goAway: APNSGoAwayRecord

    init(
        id: Int, delegate: any APNSConnectionDelegate, activity: APNSIOActivity, pingInterval: Duration,
        pingTimeout: Duration, goAway: APNSGoAwayRecord, ready: EventLoopPromise<Int>
    ) {
        self.id = id
        self.goAway = goAway
        self.delegate = delegate
        self.activity = activity
        self.pingInterval = TimeAmount(pingInterval)
        self.pingTimeout = TimeAmount(pingTimeout)
        self.ready = ready
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            let maximum = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            // Idle checks start once HTTP/2 is up; until then the connect deadline applies.
            if pingCheck == nil { schedulePingCheck(context: context, at: .now() + pingInterval) }
            ready.succeed(maximum ?? Int.max)
            if let maximum { delegate.connection(id, didChangeMaxConcurrentStreams: maximum) }
        case .goAway(let lastStreamID, let code, let debugData):
            goAway.received(lastStreamID: lastStreamID)
            delegate.connection(id, didReceiveGoAway: Self.reason(in: debugData) ?? "\(code)")
        case .ping(_, ack: true):
            pingExpiry?.cancel()
            pingExpiry = nil
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        closing = true
        pingCheck?.cancel()
        if closeReason == nil { closeReason = error }
        ready.fail(error)
        delegate.connectionIsClosing(id, reason: closeReason)
        context.close(promise: nil)
    }

    /// A channel whose connect failed never becomes active (no `channelInactive`): `ready` fails here.
    func handlerRemoved(context: ChannelHandlerContext) {
        closing = true
        pingCheck?.cancel()
        pingExpiry?.cancel()
        ready.fail(closeReason ?? ChannelError.ioOnClosedChannel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        delegate.connectionIsClosing(id, reason: closeReason)
        pingCheck?.cancel()
        pingExpiry?.cancel()
        ready.fail(closeReason ?? ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    private func schedulePingCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        pingCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.checkIdle(context: context)
        }
    }

    private func checkIdle(context: ChannelHandlerContext) {
        guard context.channel.isActive, !closing else { return }
        let now = NIODeadline.now()
        let idleSince = activity.last
        // Timers may fire a little early: a connection idle for 90% of the interval is idle enough.
        let idleEnough = now - idleSince >= .nanoseconds(pingInterval.nanoseconds / 10 * 9)
        if pingExpiry == nil, idleEnough {
            let ping = HTTP2Frame(
                streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 0x6875_6221), ack: false))
            context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            pingExpiry = context.eventLoop.assumeIsolated().scheduleTask(in: pingTimeout) { [weak self] in
                guard let self else { return }
                closing = true
                pingCheck?.cancel()
                closeReason = APNSError(.connectionFailed, "APNs did not answer a PING; the connection is dead")
                delegate.connectionIsClosing(id, reason: closeReason)
                context.close(promise: nil)
            }
        }
        // Never a deadline in the past: a closing TLS connection stays active for a while, and a
        // check scheduled in the past would run again at once and spin the event loop.
        let next = pingExpiry == nil && !idleEnough ? idleSince + pingInterval : now + pingInterval
        schedulePingCheck(context: context, at: max(next, now + .milliseconds(1)))
    }

    /// The `reason` in a GOAWAY's JSON debug data, such as `{"reason":"Shutdown"}`.
    static func reason(in debugData: ByteBuffer?) -> String? {
        guard let debugData, debugData.readableBytes > 0 else { return nil }
        struct Body: Decodable { var reason: String? }
        return try? JSONDecoder().decode(Body.self, from: Data(debugData.readableBytesView)).reason
    }
}

/// Sits between TLS and HTTP/2: records I/O for the idle check and turns the flushes of one
/// event-loop tick into one, so concurrent requests share TLS records and `write` calls.
final class APNSFlushCoalescer: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let activity: APNSIOActivity
    private var flushScheduled = false

    init(activity: APNSIOActivity) { self.activity = activity }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        activity.last = .now()
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        activity.last = .now()
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute { [weak self] in
            self?.flushScheduled = false
            context.flush()
        }
    }
}
