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

/// One request handed to a connection's event loop; ``HTTP2Streams`` resumes it exactly once.
struct HTTP2StreamRequest: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    var deadline: NIODeadline
    var resume: UnsafeContinuation<Result<HTTP2Response, HTTP2StreamEnd>, Never>
}

/// Runs the requests of one connection as HTTP/2 streams. It sits right after `NIOHTTP2Handler`,
/// which has no stream multiplexer: a channel and pipeline per stream cost more than the request.
///
/// - ``start(_:)`` takes the next odd stream ID and writes HEADERS and DATA with END_STREAM; the
///   writes of one event-loop tick share one flush.
/// - The answer is complete at END_STREAM; informational (1xx) HEADERS are skipped. A body above
///   the limit resets the stream. Streams need no WINDOW_UPDATE: our SETTINGS open each stream's
///   window past the body limit.
/// - A stream NIO closed first fails: `.refused` when the server refused it (`REFUSED_STREAM`, or
///   above the last stream ID of a GOAWAY) or it was never opened, else `.lost`.
/// - One timer per connection, armed at the earliest deadline and re-armed no more often than every
///   ``timerGranularity``, fails what is overdue with `.timedOut` and resets those streams.
/// - It returns the connection's flow-control credit for DATA it reads, in batches; without a
///   multiplexer nobody else does.
/// - Frames of stream 0 go on to ``HTTP2ConnectionMonitor``, and so do connection errors; a stream
///   error (NIO resets the stream and reports the error) fails that stream only.
final class HTTP2Streams: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct InFlight {
        let resume: UnsafeContinuation<Result<HTTP2Response, HTTP2StreamEnd>, Never>
        let deadline: NIODeadline
        var head: HPACKHeaders?
        var body: ByteBuffer?
    }

    /// Connection credit is returned once this much is used, as NIO's multiplexer does.
    static let windowUpdateThreshold = 32_768
    /// How late a timed-out request may fail at most, in exchange for one timer per connection.
    static let timerGranularity = TimeAmount.milliseconds(20)
    /// The largest client stream ID (2³¹ − 1).
    static let lastStreamID = Int(Int32.max)

    private let shared: HTTP2ConnectionShared
    private let bodyLimit: Int
    private let report: (HTTP2ConnectionEvent) -> Void
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
    /// Fields the requests send without indexing that are indexed the first time on this
    /// connection, so that later requests refer to their names; a name leaves the list once sent.
    private var firstTimeIndexed: [String]

    init(
        shared: HTTP2ConnectionShared, bodyLimit: Int, indexedOnce: [String],
        report: @escaping (HTTP2ConnectionEvent) -> Void
    ) {
        self.shared = shared
        self.bodyLimit = bodyLimit
        self.firstTimeIndexed = indexedOnce
        self.report = report
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeAll(.lost(ChannelError.ioOnClosedChannel))
        self.context = nil
    }

    /// Opens a stream for `request`. Runs on the connection's event loop.
    func start(_ request: HTTP2StreamRequest) {
        guard let context, !closed, shared.goAwayLastStreamID == nil else {
            request.resume.resume(returning: .failure(.refused(ChannelError.ioOnClosedChannel)))
            return
        }
        guard nextStreamID <= Self.lastStreamID else {
            // Stream IDs are used up: the pool must retire this connection as after a GOAWAY.
            request.resume.resume(returning: .failure(.refused(ChannelError.ioOnClosedChannel)))
            if nextStreamID == Self.lastStreamID + 2 {
                nextStreamID += 2
                report(.goAway("stream IDs used up"))
            }
            return
        }
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[streamID] = InFlight(resume: request.resume, deadline: request.deadline)
        // HEADERS that fail never opened the stream (the connection closed, or a GOAWAY came first).
        let opened = context.eventLoop.makePromise(of: Void.self)
        opened.futureResult.assumeIsolated().whenFailure { [weak self] error in
            self?.finish(streamID, .failure(.refused(error)))
        }
        let empty = request.body.readableBytes == 0
        let headers = indexingFirstUses(request.headers)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: empty)))),
            promise: opened)
        if !empty {
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(
                        streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))
                ),
                promise: nil)
        }
        scheduleFlush(context: context)
        arm(at: request.deadline, context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        guard streamID != .rootStream else {
            if case .goAway(let lastStreamID, _, _) = frame.payload {
                shared.goAwayLastStreamID = min(lastStreamID, shared.goAwayLastStreamID ?? .maxID)
            }
            context.fireChannelRead(data)
            return
        }
        switch frame.payload {
        case .headers(let payload):
            // 1xx answers are interim; the final head follows. Later HEADERS are trailers.
            if streams[streamID]?.head == nil, payload.headers.first(name: ":status")?.utf8.first != UInt8(ascii: "1") {
                streams[streamID]?.head = payload.headers
            }
            if payload.endStream { complete(streamID) }
        case .data(let payload):
            if case .byteBuffer(var buffer) = payload.data, buffer.readableBytes > 0, let stream = streams[streamID] {
                if (stream.body?.readableBytes ?? 0) + buffer.readableBytes <= bodyLimit {
                    if stream.body == nil {
                        streams[streamID]?.body = buffer
                    } else {
                        streams[streamID]?.body?.writeBuffer(&buffer)
                    }
                } else {
                    finish(streamID, .failure(.tooLarge(bodyLimit)))
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
        // Stream events end here: the monitor after this one works on stream 0 only.
        if event is NIOHTTP2StreamCreatedEvent { return }
        guard let closedStream = event as? StreamClosedEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        let streamID = closedStream.streamID
        guard streams[streamID] != nil else { return }
        let error = NIOHTTP2Errors.streamClosed(streamID: streamID, errorCode: closedStream.reason ?? .cancel)
        if closedStream.reason == .refusedStream || shared.wasRefusedByGoAway(streamID) {
            finish(streamID, .failure(.refused(error)))
        } else if let pending = pendingError, closedStream.reason != nil {
            pendingError = nil
            finish(streamID, .failure(.lost(HTTP2ClientError(.connectionLost, "the stream failed: \(pending)"))))
        } else {
            finish(streamID, .failure(.lost(error)))
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
        closeAll(.lost(shared.failure.map { $0 as any Error & Sendable } ?? ChannelError.ioOnClosedChannel))
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

    private func complete(_ streamID: HTTP2StreamID) {
        guard let stream = streams[streamID] else { return }
        guard let head = stream.head, let status = head.first(name: ":status").flatMap({ Int($0) }) else {
            finish(streamID, .failure(.lost(NIOHTTP2Errors.missingPseudoHeader(":status"))))
            return
        }
        finish(
            streamID,
            .success(HTTP2Response(status: status, headers: Self.compact(head), body: stream.body ?? ByteBuffer())))
    }

    /// `headers` in a block of its own exactly their size. The decoder reserves room for 16 fields
    /// (some 700 bytes) for every block it reads; that block, freed on the caller's thread, went
    /// back to the event loop's malloc arena under the arena's lock every time (glibc takes small
    /// chunks back without it), and the caller's and the event loop's threads waited on each other:
    /// in `hub-bench apns`, 5 such waits per 50,000 notifications with the old APNs stack (which kept
    /// the block here), 600 without this copy. The decoder's block is freed here, on its own thread.
    private static func compact(_ headers: HPACKHeaders) -> HPACKHeaders {
        var copy = HPACKHeaders()
        copy.reserveCapacity(headers.count)
        copy.add(contentsOf: headers)
        return copy
    }

    private func finish(_ streamID: HTTP2StreamID, _ result: Result<HTTP2Response, HTTP2StreamEnd>) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.resume.resume(returning: result)
    }

    private func closeAll(_ failure: HTTP2StreamEnd) {
        closed = true
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        let pending = streams
        streams = [:]
        for (streamID, stream) in pending {
            let refused = shared.wasRefusedByGoAway(streamID)
            stream.resume.resume(returning: .failure(refused ? .refused(ChannelError.ioOnClosedChannel) : failure))
        }
    }

    private func reset(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        scheduleFlush(context: context)
    }

    /// Returns connection-level flow-control credit for `length` DATA bytes, in batches.
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
