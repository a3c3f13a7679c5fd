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
///
/// Responses to later (pipelined) requests go out after the parked one ended, in request order
/// (RFC 9112, 9.3.2), but their requests are read and run meanwhile: a request pipelined behind a
/// parked long-poll may be what wakes it (a publish), or another long-poll. Up to
/// ``maxWaitingBehind`` responses wait with their request counted as answered; past that, the
/// dispatcher is told only when its response's turn comes, and stops reading until then.
final class ParkingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The header of a placeholder response; its value is the ``ParkedResponse/id``. Never sent.
    static let marker = HTTPField.Name("X-Hub-Parked")!

    /// How many responses may wait behind a parked one while later requests are read.
    static let maxWaitingBehind = 16

    /// A part of a parked request's real response.
    enum Part {
        case head(HTTPResponse)
        case body(ByteBuffer)
        case end
    }

    /// A response waiting for the ones before it.
    private enum Waiting {
        /// A part of a response its route returned, and the promise of its write.
        case part(HTTPResponsePart, EventLoopPromise<Void>?)
        /// A parked response whose placeholder went by, answered when its turn comes.
        case parked(id: UInt64, template: HTTPResponse)
    }

    /// The handler of each open connection that has one, for ``ParkedResponse/make(on:)``.
    fileprivate static let handlers = Mutex<[ObjectIdentifier: NIOLoopBound<ParkingHandler>]>([:])

    private var context: ChannelHandlerContext?
    /// The parked response being answered (the oldest response not ended) and its template.
    private var current: (id: UInt64, template: HTTPResponse)?
    /// What became of the placeholder being written (its head went by, its end not yet).
    private enum Placeholder {
        case none
        /// Its parked response is ``current`` (or was, and ended).
        case answering
        /// Its parked response joined ``waiting``.
        case waiting
        /// Its client left before it went by: nothing is answered.
        case dropped
    }
    /// Nothing of a placeholder is sent, from its head to its end.
    private var placeholder = Placeholder.none
    /// The responses after ``current``, in request order; `nil` when none (a connection that
    /// never pipelines behind a parked response allocates nothing for it).
    private var waiting: CircularBuffer<Waiting>?
    /// How many responses ``waiting`` holds.
    private var waitingResponses = 0
    /// The end of the last response that joined ``waiting`` past ``maxWaitingBehind``: its
    /// request is counted as answered only when the line is shorter.
    private var heldEnd: EventLoopPromise<Void>?
    /// Parts written before their response's turn (the waiter was quick), by response.
    private var early: [UInt64: [(parts: [Part], promise: EventLoopPromise<Void>?)]] = [:]
    /// Parked responses given up before their placeholder went by.
    private var abandoned: Set<UInt64> = []
    /// An output close asked for while responses were waiting.
    private var queuedClose: [EventLoopPromise<Void>?]?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        Self.handlers.withLock { $0[ObjectIdentifier(context.channel)] = handler }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        _ = Self.handlers.withLock { $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
        self.context = nil
        let (waiting, early, heldEnd, queuedClose) = (self.waiting, self.early, self.heldEnd, self.queuedClose)
        self.waiting = nil
        self.early = [:]
        self.heldEnd = nil
        self.queuedClose = nil
        for case .part(_, let promise) in waiting ?? [] { promise?.fail(ChannelError.ioOnClosedChannel) }
        heldEnd?.fail(ChannelError.ioOnClosedChannel)
        for promise in queuedClose ?? [] { promise?.fail(ChannelError.ioOnClosedChannel) }
        for sends in early.values { for send in sends { send.promise?.fail(ChannelError.ioOnClosedChannel) } }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if placeholder != .none {
            guard case .end = part else {
                promise?.succeed()
                return
            }
            let placeholder = self.placeholder
            self.placeholder = .none
            if placeholder == .waiting { release(promise) } else { promise?.succeed() }
            return
        }
        if case .head(let head) = part, let value = head.headerFields.value(Self.marker), let id = UInt64(value) {
            promise?.succeed()
            placeholderStarted((id, head), context: context)
            return
        }
        guard isBehind else {
            context.write(wrapOutboundOut(part), promise: promise)
            return
        }
        guard case .end = part else {
            append(.part(part, promise))
            return
        }
        append(.part(part, nil))
        waitingResponses += 1
        release(promise)
    }

    /// Hummingbird half-closes the output after the last request of a connection (`Connection:
    /// close`): if responses wait, the output closes after the last of them.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .output && isBehind {
            queuedClose = (queuedClose ?? []) + [promise]
            return
        }
        context.close(mode: mode, promise: promise)
    }

    /// A parked response or its followers are still to be written: what comes now waits.
    private var isBehind: Bool { current != nil || waiting != nil }

    private func append(_ entry: Waiting) {
        if waiting == nil { waiting = CircularBuffer(initialCapacity: 4) }
        waiting!.append(entry)
    }

    /// The placeholder of parked response `id` goes by: it is answered now or, behind another
    /// parked one, in its turn. (Its end tells the dispatcher to read on: `Connection: close`
    /// closes the output then, after what is answered now.)
    private func placeholderStarted(
        _ placeholder: (id: UInt64, template: HTTPResponse), context: ChannelHandlerContext
    ) {
        if abandoned.remove(placeholder.id) != nil {
            self.placeholder = .dropped
        } else if isBehind {
            self.placeholder = .waiting
            append(.parked(id: placeholder.id, template: placeholder.template))
            waitingResponses += 1
        } else {
            self.placeholder = .answering
            begin(placeholder, context: context)
            advance(context: context)
        }
    }

    /// A response that joined ``waiting`` has ended there: its request counts as answered unless
    /// the line is long.
    private func release(_ promise: EventLoopPromise<Void>?) {
        if waitingResponses <= Self.maxWaitingBehind {
            promise?.succeed()
        } else {
            heldEnd = promise
        }
    }

    /// Parked response `id` is the oldest: what its waiter sent early goes out.
    private func begin(_ parked: (id: UInt64, template: HTTPResponse), context: ChannelHandlerContext) {
        current = parked
        for send in early.removeValue(forKey: parked.id) ?? [] {
            guard current != nil else {
                // Parts after the response's end: nothing to write them into.
                send.promise?.fail(ChannelError.ioOnClosedChannel)
                continue
            }
            if write(send.parts, of: parked.template, promise: send.promise, context: context) { current = nil }
        }
    }

    /// Writes what waits, in order, until a parked response that has not ended comes first (or
    /// nothing is left); then an output close asked for meanwhile goes.
    private func advance(context: ChannelHandlerContext) {
        while current == nil, let next = waiting?.popFirst() {
            switch next {
            case .part(let part, let promise):
                if case .end = part { waitingResponses -= 1 }
                context.write(wrapOutboundOut(part), promise: promise)
            case .parked(let id, let template):
                waitingResponses -= 1
                begin((id, template), context: context)
            }
        }
        if waiting?.isEmpty == true { waiting = nil }
        context.flush()
        if !isBehind, let closes = queuedClose {
            queuedClose = nil
            for promise in closes { context.close(mode: .output, promise: promise) }
        }
        if waitingResponses <= Self.maxWaitingBehind, let heldEnd {
            self.heldEnd = nil
            heldEnd.succeed()
        }
    }

    /// Writes parts of the real response of parked response `id` (flushed; `promise` completes
    /// with the last of them); an `.end` ends it and lets the responses waiting behind it go.
    func send(_ parts: [Part], id: UInt64, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard let current, current.id == id else {
            early[id, default: []].append((parts, promise))
            return
        }
        if write(parts, of: current.template, promise: promise, context: context) {
            self.current = nil
            advance(context: context)
        } else {
            context.flush()
        }
    }

    /// Writes `parts` of a parked response whose placeholder's head was `template`; `true` when
    /// they ended it.
    private func write(
        _ parts: [Part], of template: HTTPResponse, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext
    ) -> Bool {
        var ended = false
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1 ? promise : nil
            switch part {
            case .head(let real):
                var head = template
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
        return ended
    }

    /// Gives up parked response `id` (its client left): nothing more of it is written, and what
    /// waited behind it goes on (an output close, most likely).
    func abandon(id: UInt64) {
        early[id] = nil
        if current?.id == id {
            current = nil
            if let context { advance(context: context) }
            return
        }
        let index = waiting?.firstIndex {
            if case .parked(let parked, _) = $0 { parked == id } else { false }
        }
        guard let index else {
            // Its placeholder has not gone by yet: it is dropped when it does.
            abandoned.insert(id)
            return
        }
        waiting!.remove(at: index)
        if waiting!.isEmpty { waiting = nil }
        waitingResponses -= 1
        if waitingResponses <= Self.maxWaitingBehind, let heldEnd {
            self.heldEnd = nil
            heldEnd.succeed()
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
