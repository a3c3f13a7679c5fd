import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The last handler of a hub connection: hands each request to the responder in a task of its
/// own, which ends with the request, so a connection between requests (idle, or with a parked
/// long-poll or event stream) has no task at all (docs/benchmarks.md, "Waiting").
///
/// It does what Hummingbird's connection task did (`HTTPChannelHandler.handleHTTP`):
/// - one request at a time: the parts of later (pipelined) requests wait, and reads stop while
///   more than ``maxQueuedParts`` of them wait;
/// - a body that arrived with its head in one read is handed over whole; a longer one streams to
///   the route with back pressure (reads stop while the route does not take it);
/// - what the route did not read of a body is read and dropped before the next request;
/// - `Connection: close` closes the output after the response; a client that half-closed has the
///   requests it sent before answered, then the output closes;
/// - a malformed body (an ``HTTP1BodyError`` after the head) ends the request's body with a 400
///   `HTTPError` saying what is wrong, and the connection closes after its response (a bare 400
///   when no request is being answered); so does a body the client cut short by closing its side
///   (the client's fault: never a 5xx, nothing logged as an error).
///
/// A request's response goes through a ``ResponseRelay``: written to the channel at once when
/// its route returns, or streamed by a second task of the request when the route is still writing
/// after ``ResponseRelay/streamingDelay``. The next request is read once the response's end was
/// written, told from the event loop.
final class RequestDispatcher: ChannelDuplexHandler, RemovableChannelHandler, NIOScheduledCallbackHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Parts of later requests held while one is answered before reads stop.
    static let maxQueuedParts = 16

    /// Where reading the current request is.
    private enum Reading {
        /// Waiting for a head.
        case head
        /// Head (and maybe body) read in this read burst; not handed over yet.
        case collecting(HTTPRequest, ByteBuffer?)
        /// Handed over; the rest of the body goes to the route.
        case streaming(RequestBodySource)
        /// The route is done with the body (or never wanted it): the rest is dropped.
        case discarding
    }

    private let responder: HTTPChannelHandler.Responder
    private let gate: RequestGate
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var reading = Reading.head
    /// A request's task is running.
    private var responding = false
    /// The output closes once the current response went.
    private var closeAfterResponse = false
    /// The client half-closed: the requests it sent before are answered, then the output closes.
    private var inputClosed = false
    /// No more requests are read (the output closed, or is about to).
    private var finished = false
    /// Parts of the requests after the one being answered.
    private var queued: [HTTPRequestPart] = []
    /// The body's reader asked for no more for now.
    private var bodyFull = false
    /// The number of the latest streamed body: its reader's calls name it, so a late call about an
    /// earlier request's body (its reader ended after the request) changes nothing.
    private var bodyNumber: UInt64 = 0
    /// A read was held back.
    private var readHeld = false
    /// The parts of the response being answered, until they are all written.
    private var relay: ResponseRelay?
    /// Makes ``relay`` stream the response if its route is still writing it after a while.
    private var streamingTimer: NIOScheduledCallback?

    init(responder: @escaping HTTPChannelHandler.Responder, gate: RequestGate, logger: Logger) {
        self.responder = responder
        self.gate = gate
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if finished { return }
        if !queued.isEmpty || (responding && isBetweenRequests) {
            queued.append(part)
            return
        }
        process(part, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !responding { handOverCollected(context: context) }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if bodyFull || queued.count >= Self.maxQueuedParts {
            readHeld = true
            return
        }
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finished = true
        queued = []
        if case .streaming(let source) = reading { source.finish(Self.bodyCutShort) }
        reading = .discarding
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            inputClosed = true
            if isCollecting && !responding { handOverCollected(context: context) }
            if case .streaming(let source) = reading { source.finish(Self.bodyCutShort) }
            // Requests read before the FIN are answered first, in order, as llhttp's servers do;
            // the output closes after the last (see `responded`).
            if !responding && !isCollecting && queued.isEmpty && !finished {
                finished = true
                context.close(mode: .output, promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// What a route reading a body gets when the client closed before the body's end.
    static let bodyCutShort = HTTPError(
        .badRequest, message: "The request body ended early: the connection closed before the body's end.")

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? HTTP1BodyError else {
            context.fireErrorCaught(error)
            return
        }
        // The head was fine (HTTP1ServerCodec answers a bad head itself): the body is not.
        let message = "The request body is malformed: " + error.reason
        let collecting = isCollecting
        if case .streaming(let source) = reading {
            source.finish(HTTPError(.badRequest, message: message))
        }
        reading = .discarding
        queued = []
        if responding {
            closeAfterResponse = true
            return
        }
        if collecting {
            // Not handed to its route yet: refused as the codec refuses a bad head, with the
            // stand-in request that RequestHeadLimits answers (a 400 problem saying why, then
            // close), so the answer does not depend on which segment brought the error.
            let head = HTTPRequest(
                method: .get, scheme: "http", authority: nil, path: "/",
                headerFields: [RequestHeadLimits.marker: "400 " + message, .connection: "close"])
            start(head, body: RequestBody(buffer: ByteBuffer()), gated: false, context: context)
            return
        }
        guard !finished else { return }
        finished = true
        logger.debug("HTTP parse error, closing connection")
        let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.close(promise: nil)
    }

    private var isBetweenRequests: Bool {
        if case .head = reading { return true }
        return false
    }

    private var isCollecting: Bool {
        if case .collecting = reading { return true }
        return false
    }

    private func process(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch (reading, part) {
        case (.head, .head(let head)):
            reading = .collecting(head, nil)
        case (.collecting(let head, var body), .body(var buffer)):
            if body == nil { body = buffer } else { body!.writeBuffer(&buffer) }
            reading = .collecting(head, body)
        case (.collecting(let head, let body), .end):
            reading = .head
            start(
                head, body: RequestBody(buffer: body ?? ByteBuffer()), gated: !Self.isOperational(head),
                context: context)
        case (.streaming(let source), .body(let buffer)):
            if source.yield(buffer) == .stopProducing { bodyFull = true }
        case (.streaming(let source), .end):
            source.finish()
            reading = .head
        case (.discarding, .end):
            reading = .head
        case (.discarding, .body):
            break
        default:
            // The decoder sends head, body…, end: anything else is a bug; drop the connection.
            finished = true
            context.close(promise: nil)
        }
    }

    /// Hands a request whose body is still arriving to the route, its body as a stream.
    private func handOverCollected(context: ChannelHandlerContext) {
        guard case .collecting(let head, let body) = reading else { return }
        bodyNumber += 1
        let source = RequestBodySource.make(
            handler: NIOLoopBound(self, eventLoop: context.eventLoop), number: bodyNumber)
        if let body, source.producer.yield(body) == .stopProducing { bodyFull = true }
        // The client closed before the body's end: what arrived is all there is.
        if inputClosed { source.producer.finish(Self.bodyCutShort) }
        reading = .streaming(source.producer)
        start(head, body: RequestBody(asyncSequence: source.sequence), gated: false, context: context)
    }

    /// Runs the request in a task of its own: at once when its body is still arriving (it is not
    /// counted by the ``RequestGate``), otherwise when the gate lets it.
    private func start(_ head: HTTPRequest, body: RequestBody, gated: Bool, context: ChannelHandlerContext) {
        responding = true
        if let connection = head.headerFields.value(.connection), connection.lowercased().contains("close") {
            closeAfterResponse = true
        }
        let request = Request(head: head, body: body)
        let channel = context.channel
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let responder = self.responder
        let logger = self.logger
        let done: @Sendable (Bool) -> Void = { succeeded in
            handler.eventLoop.runOnLoop { handler.value.responded(succeeded: succeeded) }
        }
        let relay = ResponseRelay(channel: channel, done: done)
        self.relay = relay
        streamingTimer = try? context.eventLoop.assumeIsolated().scheduleCallback(
            in: ResponseRelay.streamingDelay, handler: self)
        guard gated else {
            Task { await relay.respond(to: request, responder: responder, logger: logger) }
            return
        }
        let gate = self.gate
        gate.enter {
            // On this connection's event loop, however the gate let the request in: a request
            // that waited starts from the thread of the one that ended.
            handler.eventLoop.runOnLoop {
                guard handler.value.context != nil else {
                    // The connection closed while the request waited: its place goes on.
                    gate.leave()
                    return
                }
                Task {
                    await relay.respond(to: request, responder: responder, logger: logger)
                    gate.leave()
                }
            }
        }
    }

    /// Probes and scrapes, which the ``RequestGate`` never holds back.
    private static func isOperational(_ head: HTTPRequest) -> Bool {
        guard let path = head.path?.utf8 else { return false }
        for route in OperationPaths.all {
            let route = route.utf8
            if path.starts(with: route)
                && (path.count == route.count || path.dropFirst(route.count).first == UInt8(ascii: "?"))
            {
                return true
            }
        }
        return false
    }

    /// The request's response ended (its end was written, or it could not be): the connection
    /// closes, or reads the next request.
    private func responded(succeeded: Bool) {
        responding = false
        relay = nil
        streamingTimer?.cancel()
        streamingTimer = nil
        guard let context else { return }
        guard succeeded else {
            finished = true
            context.close(promise: nil)
            return
        }
        switch reading {
        case .streaming(let source):
            // The route did not read all of its body: the rest is read and dropped.
            source.finish()
            reading = .discarding
            resumeBody()
        case .head, .collecting, .discarding:
            break
        }
        if closeAfterResponse {
            finished = true
            queued = []
            context.close(mode: .output, promise: nil)
            return
        }
        while !queued.isEmpty && !responding {
            process(queued.removeFirst(), context: context)
        }
        if queued.isEmpty { queued = [] }  // no capacity kept while the connection waits
        if !responding { handOverCollected(context: context) }
        if inputClosed && !responding {
            // The last request the client sent before its FIN was answered.
            finished = true
            queued = []
            context.close(mode: .output, promise: nil)
            return
        }
        releaseHeldRead(context: context)
    }

    /// The route reading body `number` wants more of it (told by its ``RequestBodyDelegate``).
    func resumeBody(number: UInt64) {
        if number == bodyNumber { resumeBody() }
    }

    /// The route let go of body `number` before its end: the rest is dropped (told by its
    /// ``RequestBodyDelegate``).
    func bodyAbandoned(number: UInt64) {
        guard number == bodyNumber else { return }
        if case .streaming = reading { reading = .discarding }
        resumeBody()
    }

    /// Reads go on (the body's reader wants more, or the body is dropped).
    private func resumeBody() {
        bodyFull = false
        if let context { releaseHeldRead(context: context) }
    }

    private func releaseHeldRead(context: ChannelHandlerContext) {
        guard readHeld, !bodyFull, queued.count < Self.maxQueuedParts else { return }
        readHeld = false
        context.read()
    }
}

extension RequestDispatcher {
    /// The response is still being written: its parts stream from now on.
    func handleScheduledCallback(eventLoop: some EventLoop) {
        streamingTimer = nil
        relay?.stream()
    }
}

@available(*, unavailable)
extension RequestDispatcher: Sendable {}

extension EventLoop {
    /// Runs `body` now when called on this loop, otherwise on it soon.
    fileprivate func runOnLoop(_ body: @escaping @Sendable () -> Void) {
        if inEventLoop { body() } else { execute(body) }
    }
}
