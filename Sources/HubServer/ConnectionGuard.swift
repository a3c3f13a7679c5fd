import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// First in a connection's pipeline (bytes): counts the connection in and out of the
/// ``ConnectionRegistry``, refuses it with a bare 503 when over a cap, and closes it when the
/// deadline of its current phase passes. ``RequestPhaseHandler``, after the HTTP decoder, moves it
/// between phases as requests and responses go by.
///
/// One timer per connection, rescheduled only when a deadline comes earlier than the one it waits for.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let registry: ConnectionRegistry
    private var limits: ConnectionLimits { registry.limits }
    private var client: String?
    private var counted = false

    /// Requests whose head was read and whose response has not ended.
    private var inFlight = 0
    /// The server quiesces: the connection closes once no request is in flight.
    private var closeWhenIdle = false
    /// Whether a request's head was read and its end not yet.
    private var readingBody = false
    /// The deadline of the current phase and what passing it means; `nil`: a response is in progress.
    private var deadline: (at: NIODeadline, cut: ConnectionCut)?
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    private var context: ChannelHandlerContext?

    init(registry: ConnectionRegistry) {
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !counted else { return }
        counted = true
        client = context.channel.remoteAddress?.ipAddress
        if let refusal = registry.open(client: client) {
            counted = false
            let detail =
                refusal == .maxConnections
                ? "The server has too many open connections" : "Too many connections from your address"
            let body =
                #"{"type":"https://notificationhub.dev/problems/unavailable","title":"Service unavailable","status":503,"detail":"\#(detail); retry later."}"#
            let response =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: response)), promise: nil)
            context.close(promise: nil)
            return
        }
        arm(.now() + .init(limits.headerTimeout), .headerTimeout)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ConnectionCloseCallbacks.shared.closed(ObjectIdentifier(context.channel))
        if counted {
            counted = false
            registry.close(client: client)
        }
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A client that leaves half-closes first (the server allows it): its waits end now.
        if let event = event as? ChannelEvent, event == .inputClosed {
            ConnectionCloseCallbacks.shared.closed(ObjectIdentifier(context.channel))
        }
        // The server shuts down gracefully: parked requests, which have no task to be told, answer now.
        if event is ChannelShouldQuiesceEvent {
            ConnectionCloseCallbacks.shared.quiescing(ObjectIdentifier(context.channel))
            // As Hummingbird's connection state handler did: idle connections close now, the
            // others after their response (see `responseEndWritten`).
            if inFlight == 0 {
                context.close(promise: nil)
            } else {
                closeWhenIdle = true
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The first bytes of a request on an idle keep-alive connection start its head's clock.
        if inFlight == 0 && !readingBody, let deadline, deadline.cut == .idleTimeout {
            arm(.now() + .init(limits.headerTimeout), .headerTimeout)
        }
        context.fireChannelRead(data)
    }

    // MARK: Phases (called by RequestPhaseHandler)

    func requestHeadRead() {
        inFlight += 1
        readingBody = true
        arm(.now() + .init(limits.bodyTimeout), .bodyTimeout)
    }

    func requestEndRead() {
        readingBody = false
        if inFlight > 0 {
            deadline = nil
        } else {
            // Answered before its body ended (413, say): the connection is idle from now.
            arm(.now() + .init(limits.idleTimeout), .idleTimeout)
        }
    }

    /// `true` when the connection is to close after this response (the server quiesces).
    func responseEndWritten() -> Bool {
        inFlight = max(0, inFlight - 1)
        if closeWhenIdle && inFlight == 0 { return true }
        if inFlight == 0 && !readingBody { arm(.now() + .init(limits.idleTimeout), .idleTimeout) }
        return false
    }

    // MARK: Timer

    private func arm(_ at: NIODeadline, _ cut: ConnectionCut) {
        deadline = (at, cut)
        if let timerAt, timerAt <= at, timer != nil { return }
        schedule(at)
    }

    private func schedule(_ at: NIODeadline) {
        guard let context else { return }
        timer?.cancel()
        timerAt = at
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: at) { [self] in
            fire()
        }
    }

    private func fire() {
        timer = nil
        timerAt = nil
        guard let context, let deadline else { return }
        if deadline.at <= .now() {
            self.deadline = nil
            deadline.cut.count()
            context.close(promise: nil)
        } else {
            schedule(deadline.at)
        }
    }
}

/// After the HTTP decoder: tells the connection's ``ConnectionGuard`` when a request head and end
/// are read and when a response ends.
final class RequestPhaseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var connection: ConnectionGuard?

    func handlerAdded(context: ChannelHandlerContext) {
        connection = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        connection = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: connection?.requestHeadRead()
        case .end: connection?.requestEndRead()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), connection?.responseEndWritten() == true {
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        }
        context.write(data, promise: promise)
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}

@available(*, unavailable)
extension RequestPhaseHandler: Sendable {}

/// What to do when a connection closes, by connection: a request that waits (a long-poll)
/// registers how to end its wait, so a client that goes away releases it at once. Costs one
/// dictionary entry per waiting request, no task (Hummingbird's
/// `consumeWithCancellationOnInboundClose` costs three tasks and the connection's keep-alive).
/// A parked request (``ParkingHandler``), which has no task to see a graceful shutdown, also
/// registers what to do when the server quiesces the connection.
final class ConnectionCloseCallbacks: Sendable {
    static let shared = ConnectionCloseCallbacks()

    private struct Callbacks {
        let closed: @Sendable () -> Void
        let quiescing: (@Sendable () -> Void)?
    }

    private struct State {
        var callbacks: [ObjectIdentifier: [UInt64: Callbacks]] = [:]
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Runs `callback` when the connection `connection` closes, and `quiescing` when the server
    /// shuts down gracefully while it is open, unless removed before.
    func register(
        _ connection: ObjectIdentifier, quiescing: (@Sendable () -> Void)? = nil,
        _ callback: @escaping @Sendable () -> Void
    ) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.callbacks[connection, default: [:]][state.next] = Callbacks(closed: callback, quiescing: quiescing)
            return state.next
        }
    }

    func remove(_ connection: ObjectIdentifier, _ id: UInt64) {
        state.withLock { state in
            state.callbacks[connection]?[id] = nil
            if state.callbacks[connection]?.isEmpty == true { state.callbacks[connection] = nil }
        }
    }

    /// Called by ``ConnectionGuard`` when its connection closed.
    func closed(_ connection: ObjectIdentifier) {
        let callbacks = state.withLock { $0.callbacks.removeValue(forKey: connection) }
        for callback in callbacks?.values ?? [:].values { callback.closed() }
    }

    /// Called by ``ConnectionGuard`` when the server asks its connection to quiesce.
    func quiescing(_ connection: ObjectIdentifier) {
        let callbacks = state.withLock { $0.callbacks[connection].map { Array($0.values) } ?? [] }
        for callback in callbacks { callback.quiescing?() }
    }
}
