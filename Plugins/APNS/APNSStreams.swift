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

/// One request handed to a connection's event loop. ``APNSStreams`` resumes its continuation
/// exactly once: with the answer, or with an ``APNSStreamFailure``.
struct APNSStreamRequest: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    var deadline: NIODeadline
    var continuation: UnsafeContinuation<APNSHTTPResponse, any Error>
}

/// Runs the requests of one connection as HTTP/2 streams. It sits right after `NIOHTTP2Handler`,
/// which has no stream multiplexer: a channel and pipeline per stream cost more than the request.
///
/// - ``start(_:)`` takes the next odd stream ID and writes one HEADERS and one DATA frame with
///   END_STREAM; the writes of one event-loop tick share one flush.
/// - The answer is complete at END_STREAM; informational (1xx) HEADERS are skipped. A body larger
///   than ``maxResponseBody`` resets the stream (APNs' bodies are a few dozen bytes).
/// - A stream NIO closed first fails: `.refused` when the server refused it (`REFUSED_STREAM`, or
///   above the last stream ID of a GOAWAY) or it was never opened, else `.lost`.
/// - One timer per connection, armed at the earliest deadline and re-armed no more often than every
///   ``timerGranularity``, fails what is overdue with `.timedOut` and resets those streams.
/// - It returns the connection's flow-control credit for DATA it reads, in batches; without a
///   multiplexer nobody else does.
/// - Frames of stream 0 go on to ``APNSConnectionHandler``, and so do connection errors; a stream
///   error (NIO resets the stream and reports the error) fails that stream only.
final class APNSStreams: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct InFlight {
        let continuation: UnsafeContinuation<APNSHTTPResponse, any Error>
        let deadline: NIODeadline
        var head: HPACKHeaders?
        var body: [UInt8] = []
    }

    /// The largest answer body read; APNs sends at most a small JSON object.
    static let maxResponseBody = 16_384
    /// Connection credit is returned once this much is used, as NIO's multiplexer does.
    static let windowUpdateThreshold = 32_768
    /// How late a timed-out request may fail at most, in exchange for one timer per connection.
    static let timerGranularity = TimeAmount.milliseconds(20)
    /// The largest client stream ID (2³¹ − 1).
    static let lastStreamID = Int(Int32.max)

    private let id: Int
    private let goAway: APNSGoAwayRecord
    private let delegate: any APNSConnectionDelegate
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: InFlight] = [:]
    private var nextStreamID = 1
    private var closed = false
    private var flushPending = false
    private var unacknowledged = 0
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    /// An error reported by NIO, until it is known whether a stream reset follows (a stream error)
    /// or not (a connection error, passed on).
    private var pendingError: (any Error)?
    /// Fields the transport sends as literals without indexing that Apple asks to be indexed the
    /// first time on a connection, so that later requests refer to their names (PROVIDERS.md §1.2);
    /// a name leaves the list once sent.
    private var firstTimeIndexed = ["apns-id", "apns-expiration", "apns-collapse-id"]

    init(id: Int, goAway: APNSGoAwayRecord, delegate: any APNSConnectionDelegate) {
        self.id = id
        self.goAway = goAway
        self.delegate = delegate
    }

    /// How many requests are waiting for their answers.
    var inFlight: Int { streams.count }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeAll(.lost(ChannelError.ioOnClosedChannel))
        self.context = nil
    }

    /// Opens a stream for `request`. Runs on the connection's event loop.
    func start(_ request: APNSStreamRequest) {
        guard let context, !closed, !goAway.isReceived else {
            request.continuation.resume(throwing: APNSStreamFailure.refused)
            return
        }
        guard nextStreamID <= Self.lastStreamID else {
            // Stream IDs are used up: the pool must drain this connection like after a GOAWAY.
            request.continuation.resume(throwing: APNSStreamFailure.refused)
            if nextStreamID == Self.lastStreamID + 2 {
                nextStreamID += 2
                delegate.connection(id, didReceiveGoAway: "stream IDs used up")
            }
            return
        }
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[streamID] = InFlight(continuation: request.continuation, deadline: request.deadline)
        // HEADERS that fail never opened the stream (the connection closed, or a GOAWAY came first).
        let opened = context.eventLoop.makePromise(of: Void.self)
        opened.futureResult.assumeIsolated().whenFailure { [weak self] _ in
            self?.finish(streamID, .failure(.refused))
        }
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: indexingFirstUses(request.headers))))),
            promise: opened)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
            promise: nil)
        scheduleFlush(context: context)
        arm(at: request.deadline, context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        guard streamID != .rootStream else {
            if case .goAway(let lastStreamID, _, _) = frame.payload { goAway.received(lastStreamID: lastStreamID) }
            context.fireChannelRead(data)
            return
        }
        switch frame.payload {
        case .headers(let payload):
            if streams[streamID]?.head == nil, !Self.isInformational(payload.headers) {
                streams[streamID]?.head = payload.headers
            }
            if payload.endStream { complete(streamID) }
        case .data(let payload):
            if case .byteBuffer(let buffer) = payload.data, buffer.readableBytes > 0, let stream = streams[streamID] {
                if stream.body.count + buffer.readableBytes <= Self.maxResponseBody {
                    streams[streamID]?.body.append(contentsOf: buffer.readableBytesView)
                } else {
                    finish(
                        streamID, .failure(.lost(APNSError(.connectionFailed, "APNs answered with an oversized body"))))
                    reset(streamID, context: context)
                }
            }
            if payload.endStream { complete(streamID) }
            // Writes last: NIO delivers its pending events (this stream's close) when a frame is written.
            credit(payload.data.readableBytes + (payload.paddingBytes.map { $0 + 1 } ?? 0), context: context)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Stream events end here: the connection handler after this one works on stream 0 only.
        if event is NIOHTTP2StreamCreatedEvent { return }
        guard let closedStream = event as? StreamClosedEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if streams[closedStream.streamID] != nil {
            let streamID = closedStream.streamID
            if closedStream.reason == .refusedStream || goAway.refused(streamID) {
                finish(streamID, .failure(.refused))
            } else if let error = pendingError, closedStream.reason != nil {
                pendingError = nil
                finish(streamID, .failure(.lost(error)))
            } else {
                finish(
                    streamID,
                    .failure(
                        .lost(
                            NIOHTTP2Errors.streamClosed(streamID: streamID, errorCode: closedStream.reason ?? .cancel))
                    ))
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO reports a stream error, then closes that stream: wait to see which it was.
        let isFirst = pendingError == nil
        pendingError = error
        guard isFirst else { return }
        context.eventLoop.assumeIsolated().execute { [weak self] in
            guard let self, let error = pendingError else { return }
            pendingError = nil
            context.fireErrorCaught(error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeAll(.lost(ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    // MARK: - Streams

    /// `headers` with the fields of ``firstTimeIndexed`` that this connection has not sent yet
    /// switched to incremental indexing; `headers` itself once all have been sent.
    private func indexingFirstUses(_ headers: HPACKHeaders) -> HPACKHeaders {
        guard !firstTimeIndexed.isEmpty, headers.contains(where: { firstTimeIndexed.contains($0.name) }) else {
            return headers
        }
        var result = HPACKHeaders()
        result.reserveCapacity(headers.count)
        for (name, value, indexing) in headers {
            if let index = firstTimeIndexed.firstIndex(of: name) {
                firstTimeIndexed.remove(at: index)
                result.add(name: name, value: value, indexing: .indexable)
            } else {
                result.add(name: name, value: value, indexing: indexing)
            }
        }
        return result
    }

    private static func isInformational(_ headers: HPACKHeaders) -> Bool {
        headers.first(name: ":status")?.utf8.first == UInt8(ascii: "1")
    }

    private func complete(_ streamID: HTTP2StreamID) {
        guard let stream = streams[streamID] else { return }
        var status: Int?
        var response = APNSHTTPResponse(status: 0, body: stream.body)
        for (name, value, _) in stream.head ?? HPACKHeaders() {
            switch name {
            case ":status": status = Int(value)
            case "apns-id": response.apnsID = value
            case "apns-unique-id": response.uniqueID = value
            case "retry-after": response.retryAfter = value
            default: break
            }
        }
        guard let status else {
            finish(streamID, .failure(.lost(NIOHTTP2Errors.missingPseudoHeader(":status"))))
            return
        }
        response.status = status
        finish(streamID, .success(response))
    }

    private func finish(_ streamID: HTTP2StreamID, _ result: Result<APNSHTTPResponse, APNSStreamFailure>) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.continuation.resume(with: result.mapError { $0 as any Error })
    }

    private func closeAll(_ failure: APNSStreamFailure) {
        closed = true
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        let pending = streams
        streams = [:]
        for (streamID, stream) in pending {
            stream.continuation.resume(throwing: goAway.refused(streamID) ? APNSStreamFailure.refused : failure)
        }
    }

    private func reset(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        scheduleFlush(context: context)
    }

    /// Returns connection-level flow-control credit for `length` DATA bytes, in batches. Streams
    /// need none: an answer never comes near the initial stream window.
    private func credit(_ length: Int, context: ChannelHandlerContext) {
        guard length > 0 else { return }
        unacknowledged += length
        guard unacknowledged >= Self.windowUpdateThreshold else { return }
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))),
            promise: nil)
        unacknowledged = 0
        scheduleFlush(context: context)
    }

    /// One flush for every write of this event-loop tick.
    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute { [weak self] in
            guard let self, let context = self.context else { return }
            flushPending = false
            context.flush()
        }
    }

    // MARK: - Deadlines

    private func arm(at deadline: NIODeadline, context: ChannelHandlerContext) {
        if let armed = timerDeadline, armed <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.expire()
        }
    }

    private func expire() {
        timer = nil
        timerDeadline = nil
        guard let context else { return }
        let now = NIODeadline.now()
        var overdue: [HTTP2StreamID] = []
        var next: NIODeadline?
        for (streamID, stream) in streams {
            if stream.deadline <= now {
                overdue.append(streamID)
            } else {
                next = min(next ?? stream.deadline, stream.deadline)
            }
        }
        for streamID in overdue {
            finish(streamID, .failure(.timedOut))
            reset(streamID, context: context)
        }
        if let next { arm(at: max(next, now + Self.timerGranularity), context: context) }
    }
}
