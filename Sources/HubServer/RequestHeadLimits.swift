import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// The limits on a request's head, and how a head over them is answered.
///
/// - A request target (path and query) over ``maxURLBytes`` gets 414 `uri-too-long`.
/// - A head over ``maxHeadBytes`` (NIO's HTTP/1 decoder limit: the request line and all header
///   fields together, or one field alone) gets 431 `header-fields-too-large`, or 414 when the
///   request line alone was already over it.
/// - A head NIO cannot parse gets 400 `invalid-request`.
///
/// All are `application/problem+json` answers, after which the connection is closed. Without
/// this, Hummingbird answers a head the decoder refuses with a bare 400 and an empty body.
enum RequestHeadLimits {
    /// The longest request target, in bytes (8 KiB, as most proxies allow).
    static let maxURLBytes = 8 * 1024
    /// The largest request head, in bytes: Hummingbird's and NIO's decoder default (80 KiB).
    static let maxHeadBytes = 80 * 1024

    /// The header the decoder's error handler marks its stand-in request with; stripped from
    /// every request a client sends, so only the handler can set it.
    static let marker = HTTPField.Name("X-Hub-Head-Error")!
    static let markerName = "X-Hub-Head-Error"

    /// The problem of a request, when it is one of the handler's stand-ins or its target is too long.
    static func problem(for request: Request) -> Problem? {
        switch request.headers[marker] {
        case "414":
            return Problem(
                .uriTooLong,
                "The request line is longer than the \(maxHeadBytes) bytes this server reads; the URL must be at most \(maxURLBytes) bytes.",
                headers: [.connection: "close"])
        case "431":
            return Problem(
                .headerFieldsTooLarge,
                "The request head (request line and header fields) is larger than the \(maxHeadBytes) bytes this server reads.",
                headers: [.connection: "close"])
        case "400":
            return Problem(.invalidRequest, "The request head is not valid HTTP/1.1.", headers: [.connection: "close"])
        default:
            break
        }
        let target = request.uri.description.utf8.count
        guard target > maxURLBytes else { return nil }
        return Problem(
            .uriTooLong, "The URL is \(target) bytes; this server accepts at most \(maxURLBytes).")
    }
}

/// Answers the stand-in requests of ``RequestHeadErrorHandler`` and targets over
/// ``RequestHeadLimits/maxURLBytes`` before any route or authentication runs.
struct RequestHeadLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let problem = RequestHeadLimits.problem(for: request) {
            context.coreContext.endpointPath.value = "RequestHead"
            return problem.response
        }
        return try await next(request, context)
    }
}

/// Puts a ``RequestLineSniffer`` before NIO's request decoder of an HTTP/1 pipeline and a
/// ``RequestHeadErrorHandler`` right after it (no handler of its own stays in the pipeline: each
/// one costs a waiting connection memory).
enum RequestHeadGuard {
    /// Adds the two handlers around the `ByteToMessageHandler<HTTPRequestDecoder>` of `pipeline`.
    static func install(in pipeline: ChannelPipeline.SynchronousOperations) throws {
        let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
        let state = RequestHeadState()
        try pipeline.addHandler(RequestLineSniffer(state: state), position: .before(decoder.handler))
        try pipeline.addHandler(RequestHeadErrorHandler(state: state), position: .after(decoder.handler))
    }
}

final class RequestHeadState {
    /// Whether the decoder is between requests or inside a head (not inside a body).
    var awaitingHead = true
    /// The bytes of the head being read that the sniffer passed on without finding its end of line.
    var scanned = 0
    /// The length of the head's request line, once its end was seen.
    var requestLineLength: Int?

    /// Whether the decoder refused the head for its request line (414) rather than its fields (431):
    /// the line alone is over the decoder's limit, or no end of it was seen before the limit.
    var requestLineOverflowed: Bool {
        requestLineLength.map { $0 >= RequestHeadLimits.maxHeadBytes } ?? true
    }

    func startHead() {
        awaitingHead = true
        scanned = 0
        requestLineLength = nil
    }
}

/// Watches the raw bytes of a head being read for the end of its request line, so that a head
/// the decoder refuses can be told apart: request line too long (414) or header fields (431).
final class RequestLineSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let state: RequestHeadState

    init(state: RequestHeadState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if state.awaitingHead && state.requestLineLength == nil {
            let bytes = unwrapInboundIn(data).readableBytesView
            if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                state.requestLineLength = state.scanned + (newline - bytes.startIndex)
            } else {
                state.scanned += bytes.count
            }
        }
        context.fireChannelRead(data)
    }
}

/// Turns a head the decoder refuses into a stand-in request that the router answers with a
/// problem (in order, after the answers to earlier pipelined requests), then closes the
/// connection once that answer is written. Also strips the stand-in marker from real requests.
final class RequestHeadErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    let state: RequestHeadState
    private var failed = false
    /// Requests passed on, and answers written to their end.
    private var requests = 0
    private var answers = 0

    init(state: RequestHeadState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            requests += 1
            state.awaitingHead = false
            head.headers.remove(name: RequestHeadLimits.markerName)
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body:
            context.fireChannelRead(data)
        case .end:
            state.startHead()
            context.fireChannelRead(data)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if failed { return }  // the decoder reports every later read as an error too
        guard let parserError = error as? HTTPParserError, state.awaitingHead else {
            context.fireErrorCaught(error)
            return
        }
        failed = true
        requests += 1
        let status =
            switch parserError {
            case .headerOverflow: state.requestLineOverflowed ? "414" : "431"
            default: "400"
            }
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: "/",
            headers: [RequestHeadLimits.markerName: status, "Connection": "close"])
        context.fireChannelRead(wrapInboundOut(.head(head)))
        context.fireChannelRead(wrapInboundOut(.end(nil)))
    }

    /// Closes the connection once the stand-in request's answer is written. Hummingbird closes
    /// the output after it (the stand-in says `Connection: close`); the input is still read, and
    /// dropped, for ``lingering`` so that the client reads the answer before the connection is
    /// reset (closing with unread input sends a TCP reset, which can destroy the answer).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        answers += 1
        guard failed, answers >= requests else {
            context.write(data, promise: promise)
            return
        }
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in
            channel.eventLoop.scheduleTask(in: Self.lingering) { channel.close(promise: nil) }
        }
        written.futureResult.cascade(to: promise)
        context.write(data, promise: written)
    }

    /// How long a connection whose head was refused stays open for reading after the answer.
    static let lingering = TimeAmount.seconds(2)
}
