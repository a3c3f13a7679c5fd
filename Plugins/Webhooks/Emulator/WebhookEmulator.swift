public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An app server's webhook receiver on 127.0.0.1 (plain HTTP/1.1), for tests and
/// `hub emulate webhook`: it verifies every request's signature as a receiver should
/// (``WebhookSignature``) and records what it received.
///
/// It answers `204` unless scripted: ``failNext(_:status:)`` answers the next requests with an
/// error status, ``stall(_:)`` holds every answer for a while (a slow receiver; the hub's timeout
/// ends the request first), ``stallNext(_:for:)`` only the next few. A request whose signature
/// does not verify is answered `401` (and recorded with the problem).
public final class WebhookEmulator: Sendable {
    /// One request as received.
    public struct Received: Sendable, Hashable {
        /// `webhook-id`.
        public var id: String
        public var timestamp: String
        /// `webhook-signature`.
        public var signature: String
        /// The event's `type`, from the body.
        public var type: String
        /// The raw body.
        public var body: String
        /// `nil` when the signature verified; otherwise why not.
        public var problem: String?
        /// The status it is answered with.
        public var status: Int
        /// Whether the answer was written (a stalled answer is not, while it waits, nor when the
        /// sender gave up and closed the connection first).
        public var answered = false
        /// When it arrived.
        public var at: Date

        /// The body's `data` object.
        public var data: [String: Any] {
            let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
            return object?["data"] as? [String: Any] ?? [:]
        }
    }

    struct Script {
        var failures = 0
        var failStatus = 500
        var stalled = 0
        var stallFor: TimeAmount = .zero
        var stallAll: TimeAmount?
        var received: [Received] = []
    }

    /// The receiver's URL: `http://127.0.0.1:<port>/hook`.
    public var url: String { "http://127.0.0.1:\(port)/hook" }
    /// `127.0.0.1:<port>`, as `transports.webhooks.allowedHosts` lists it.
    public var host: String { "127.0.0.1:\(port)" }
    public let port: Int
    /// The secret requests must be signed with.
    public let secret: String
    let state: WebhookReceiverState
    private let channel: any Channel

    private init(channel: any Channel, port: Int, secret: String, state: WebhookReceiverState) {
        self.channel = channel
        self.port = port
        self.secret = secret
        self.state = state
    }

    /// Starts a receiver on 127.0.0.1:`port` (0: a free one) that verifies with `secret`.
    public static func start(port: Int = 0, secret: String) async throws -> WebhookEmulator {
        guard let key = WebhookSignature.key(fromSecret: secret) else {
            throw WebhookEmulatorError("the secret is not whsec_ and the base64 of 24 to 64 bytes")
        }
        let state = WebhookReceiverState(key: key)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(WebhookReceiverHandler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: port)
            .get()
        guard let bound = channel.localAddress?.port else {
            try? await channel.close()
            throw WebhookEmulatorError("the receiver's socket has no port")
        }
        return WebhookEmulator(channel: channel, port: bound, secret: secret, state: state)
    }

    /// What it received so far, in arrival order.
    public var received: [Received] { state.script.withLock { $0.received } }

    /// Answers the next `count` requests with `status`.
    public func failNext(_ count: Int, status: Int = 500) {
        state.script.withLock {
            $0.failures = count
            $0.failStatus = status
        }
    }

    /// Holds the answer to the next `count` requests for `delay`.
    public func stallNext(_ count: Int, for delay: Duration) {
        state.script.withLock {
            $0.stalled = count
            $0.stallFor = TimeAmount(delay)
        }
    }

    /// Holds every answer for `delay` (`nil`: answer at once again).
    public func stall(_ delay: Duration?) {
        state.script.withLock { $0.stallAll = delay.map { TimeAmount($0) } }
    }

    /// Stops listening.
    public func shutdown() async throws {
        try await channel.close()
    }
}

/// Why the emulator could not start.
public struct WebhookEmulatorError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

final class WebhookReceiverState: Sendable {
    let key: [UInt8]
    let script = Mutex(WebhookEmulator.Script())
    init(key: [UInt8]) { self.key = key }
}

private final class WebhookReceiverHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: WebhookReceiverState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(state: WebhookReceiverState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body += buffer.readableBytesView
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, body: body, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, body: [UInt8], context: ChannelHandlerContext) {
        let headers = head.headers
        let problem = WebhookSignature.problem(
            id: headers.first(name: "webhook-id"), timestamp: headers.first(name: "webhook-timestamp"),
            signatures: headers.first(name: "webhook-signature"), body: body, key: state.key, now: Date())
        let text = String(decoding: body, as: UTF8.self)
        let type =
            ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["type"] as? String ?? ""
        let (status, delay, index): (Int, TimeAmount, Int) = state.script.withLock { script in
            var status = problem == nil ? 204 : 401
            var delay = TimeAmount.zero
            if problem == nil, script.failures > 0 {
                script.failures -= 1
                status = script.failStatus
            } else if problem == nil, script.stalled > 0 {
                script.stalled -= 1
                delay = script.stallFor
            } else if let all = script.stallAll {
                delay = all
            }
            script.received.append(
                WebhookEmulator.Received(
                    id: headers.first(name: "webhook-id") ?? "",
                    timestamp: headers.first(name: "webhook-timestamp") ?? "",
                    signature: headers.first(name: "webhook-signature") ?? "",
                    type: type, body: text, problem: problem, status: status, at: Date()))
            return (status, delay, script.received.count - 1)
        }
        let keepAlive = head.isKeepAlive
        let answer = {
            var responseHeaders = HTTPHeaders([("content-length", "0")])
            if !keepAlive { responseHeaders.add(name: "connection", value: "close") }
            context.write(
                self.wrapOutboundOut(
                    .head(
                        HTTPResponseHead(
                            version: head.version, status: .init(statusCode: status), headers: responseHeaders))),
                promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                if !keepAlive { context.close(promise: nil) }
            }
            self.state.script.withLock { $0.received[index].answered = true }
        }
        if delay > .zero {
            context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                guard context.channel.isActive else { return }
                answer()
            }
        } else {
            answer()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
