import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Lets a request answer after its handler returned, so a long-poll or an event stream waits
/// without a task: the handler returns a placeholder response marked ``marker`` (its headers, CORS
/// and Date included, are the template of the real one), this handler holds it back, and the
/// request's waiter writes the real response later through ``ParkedResponse``. The request's
/// task ends meanwhile, and the ``RequestDispatcher`` reads the connection on, as after any response.
///
/// Sits between the hub's ``RequestPhaseHandler`` and its ``RequestDispatcher``, so the phase
/// handler sees only the real response: the connection is not idle while a response is parked,
/// and a server shutting down closes it after the real end.
/// Responses to later (pipelined) requests wait until the parked one ended.
final class ParkingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The header of a placeholder response; its value is the ``ParkedResponse/id``. Never sent.
    static let marker = HTTPField.Name("X-Hub-Parked")!

    /// A part of a parked request's real response.
    enum Part {
        case head(HTTPResponse)
        case body(ByteBuffer)
        case end
    }

    /// The handler of each open connection that has one, for ``ParkedResponse/make(on:)``.
    fileprivate static let handlers = Mutex<[ObjectIdentifier: NIOLoopBound<ParkingHandler>]>([:])

    private var context: ChannelHandlerContext?
    /// The parked response being answered (its placeholder went by) and the placeholder's head.
    private var current: (id: UInt64, template: HTTPResponse)?
    /// The placeholder's end, not to be sent.
    private var swallowEnd = false
    /// Parts written before their placeholder went by (the waiter was quick), by response.
    private var early: [UInt64: [(parts: [Part], promise: EventLoopPromise<Void>?)]] = [:]
    /// Writes of the responses after a parked one, until it ended.
    private var queued: [(HTTPResponsePart, EventLoopPromise<Void>?)] = []
    /// An output close asked for while a response was parked.
    private var queuedClose: [EventLoopPromise<Void>?]?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        Self.handlers.withLock { $0[ObjectIdentifier(context.channel)] = handler }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        _ = Self.handlers.withLock { $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
        self.context = nil
        let queued = self.queued
        let early = self.early
        self.queued = []
        self.early = [:]
        for (_, promise) in queued { promise?.fail(ChannelError.ioOnClosedChannel) }
        for promise in queuedClose ?? [] { promise?.fail(ChannelError.ioOnClosedChannel) }
        queuedClose = nil
        for sends in early.values { for send in sends { send.promise?.fail(ChannelError.ioOnClosedChannel) } }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        write(unwrapOutboundIn(data), promise: promise, context: context)
    }

    /// Hummingbird half-closes the output after the last request of a connection (`Connection:
    /// close`): if its response is parked, the output closes after the real response.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .output && (current != nil || !early.isEmpty) {
            queuedClose = (queuedClose ?? []) + [promise]
            return
        }
        context.close(mode: mode, promise: promise)
    }

    private func write(_ part: HTTPResponsePart, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        if case .end = part, swallowEnd {
            swallowEnd = false
            promise?.succeed()
            return
        }
        if current != nil {
            queued.append((part, promise))
            return
        }
        switch part {
        case .head(let head):
            if let value = head.headerFields.value(Self.marker), let id = UInt64(value) {
                current = (id, head)
                swallowEnd = true
                promise?.succeed()
                for send in early.removeValue(forKey: id) ?? [] { self.send(send.parts, id: id, promise: send.promise) }
                return
            }
        case .body, .end:
            break
        }
        context.write(wrapOutboundOut(part), promise: promise)
    }

    /// Writes parts of the real response of parked response `id` (flushed; `promise` completes
    /// with the last of them); an `.end` ends it and lets the responses queued behind it go.
    func send(_ parts: [Part], id: UInt64, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard let current, current.id == id else {
            early[id, default: []].append((parts, promise))
            return
        }
        var ended = false
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1 ? promise : nil
            switch part {
            case .head(let real):
                var head = current.template
                head.status = real.status
                head.headerFields[Self.marker] = nil
                head.headerFields[.contentLength] = nil
                for field in real.headerFields { head.headerFields[field.name] = nil }
                head.headerFields.append(contentsOf: real.headerFields)
                context.write(wrapOutboundOut(.head(head)), promise: last)
            case .body(let buffer):
                context.write(wrapOutboundOut(.body(buffer)), promise: last)
            case .end:
                context.write(wrapOutboundOut(.end(nil)), promise: last)
                ended = true
            }
        }
        if parts.isEmpty { promise?.succeed() }
        context.flush()
        if ended { responseEnded(context: context) }
    }

    /// Gives up parked response `id` (its client left): nothing more of it is written, and what
    /// waited behind it goes on (an output close, most likely).
    func abandon(id: UInt64) {
        early[id] = nil
        guard let context, current?.id == id else { return }
        responseEnded(context: context)
    }

    /// The parked response ended: the responses and output close queued behind it go.
    private func responseEnded(context: ChannelHandlerContext) {
        self.current = nil
        // The placeholder's end may still be on its way: it stays swallowed.
        let queued = self.queued
        self.queued = []
        for (part, promise) in queued { write(part, promise: promise, context: context) }
        if self.current == nil {
            context.flush()
            if let closes = queuedClose {
                queuedClose = nil
                for promise in closes { context.close(mode: .output, promise: promise) }
            }
        }
    }
}

@available(*, unavailable)
extension ParkingHandler: Sendable {}

/// One parked response: writes its real response, from any thread, through the connection's
/// ``ParkingHandler``.
struct ParkedResponse: Sendable {
    private static let ids = Atomic<UInt64>(0)

    let id: UInt64
    private let handler: NIOLoopBound<ParkingHandler>

    private init(handler: NIOLoopBound<ParkingHandler>) {
        self.id = Self.ids.add(1, ordering: .relaxed).newValue
        self.handler = handler
    }

    /// A parked response on `channel`, or `nil` when its pipeline cannot park one (a server
    /// built without ``GuardedHTTP1Channel``, such as HummingbirdTesting's router tests).
    static func make(on channel: any Channel) -> ParkedResponse? {
        ParkingHandler.handlers.withLock { $0[ObjectIdentifier(channel)] }.map(ParkedResponse.init)
    }

    /// The headers of the placeholder response the route returns.
    var placeholderHeaders: HTTPFields { [ParkingHandler.marker: String(id)] }

    /// Writes `parts` (flushed); `then` runs once they were handed to the socket, with `false`
    /// when they could not be (the connection closed). A client that stops reading holds `then`
    /// back, so a stream that writes only after the last write went stops with it.
    func send(_ parts: [ParkingHandler.Part], then: (@Sendable (Bool) -> Void)? = nil) {
        let handler = self.handler
        let id = self.id
        let loop = handler.eventLoop
        loop.execute {
            let promise = then.map { then in
                let promise = loop.makePromise(of: Void.self)
                promise.futureResult.whenComplete { result in
                    if case .success = result { then(true) } else { then(false) }
                }
                return promise
            }
            handler.value.send(parts, id: id, promise: promise)
        }
    }

    /// Gives the response up: its client left.
    func abandon() {
        let handler = self.handler
        let id = self.id
        handler.eventLoop.execute { handler.value.abandon(id: id) }
    }

    /// Writes a whole response: head, body, end; then runs `then` on the connection's event loop.
    func answer(
        status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer, then: (@Sendable () -> Void)? = nil
    ) {
        var headers = headers
        headers[.contentLength] = String(body.readableBytes)
        let parts: [ParkingHandler.Part] = [
            .head(HTTPResponse(status: status, headerFields: headers)), .body(body), .end,
        ]
        let handler = self.handler
        let id = self.id
        handler.eventLoop.execute {
            handler.value.send(parts, id: id, promise: nil)
            then?()
        }
    }
}
