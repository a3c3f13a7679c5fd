import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

// The HTTPS server under the FCM, WNS and Web Push emulators.

/// One HTTP request as an emulator sees it: method, target, lower-cased header names, whole body.
package struct EmulatorRequest: Sendable {
    package var method: String
    /// The path without the query string.
    package var path: String
    package var query: String?
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]
    /// `HTTP/2.0` or `HTTP/1.1`.
    package var version: String

    package init(
        method: String, path: String, query: String?, headers: [(name: String, value: String)], body: [UInt8],
        version: String
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.version = version
    }

    /// The first value of a header, by case-insensitive name.
    package func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }

    /// Every value of a header, by case-insensitive name.
    package func headers(named name: String) -> [String] {
        let lower = name.lowercased()
        return headers.filter { $0.name == lower }.map(\.value)
    }
}

/// A response an emulator sends; `content-length` is added by the server.
package struct EmulatorResponse: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response with the given text as body.
    package static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> EmulatorResponse {
        EmulatorResponse(
            status: status, headers: [("content-type", "application/json; charset=UTF-8")] + headers,
            body: Array(text.utf8))
    }
}

/// What a route answers: a response at once (the hot path), or work that needs `await`.
package enum EmulatorReply: Sendable {
    case now(EmulatorResponse)
    case later(@Sendable () async -> EmulatorResponse)
}

/// A TLS server on 127.0.0.1 that hands each complete request to a route and writes its reply.
///
/// With `http2` it offers `h2` and `http/1.1` by ALPN and serves both through the same route. By
/// default it runs on NIO's shared event loops; with `ownThread` on an event-loop thread of its own,
/// so a client in the same process (a transport under benchmark) never shares a thread with it, as
/// h2load in another process does not.
final class EmulatorHTTPServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let connections: ConnectionTracker
    /// The emulator's own event loop group, shut down with it; `nil` on the shared loops.
    private let group: MultiThreadedEventLoopGroup?

    private init(channel: any Channel, port: Int, connections: ConnectionTracker, group: MultiThreadedEventLoopGroup?) {
        self.channel = channel
        self.port = port
        self.connections = connections
        self.group = group
    }

    /// Binds 127.0.0.1:`port` (0 = any free port) and serves until ``shutdown()``.
    static func start(
        certificate: TestCertificate, port: Int, http2: Bool, ownThread: Bool = false,
        maximumBodyBytes: Int = 1 << 20, route: @escaping @Sendable (EmulatorRequest) -> EmulatorReply
    ) async throws -> EmulatorHTTPServer {
        let tls = try certificate.serverTLSConfiguration(alpn: http2 ? ["h2", "http/1.1"] : ["http/1.1"])
        let context = try NIOSSLContext(configuration: tls)
        let tracker = ConnectionTracker()
        let group = ownThread ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let bound: any Channel
        do {
            bound = try await bind(
                group: group ?? .singleton, port: port, http2: http2, context: context, tracker: tracker,
                maximumBodyBytes: maximumBodyBytes, route: route)
        } catch {
            try? await group?.shutdownGracefully()
            throw error
        }
        guard let boundPort = bound.localAddress?.port else {
            try? await bound.close()
            try? await group?.shutdownGracefully()
            throw TestCertificateError("the emulator socket has no local port")
        }
        return EmulatorHTTPServer(channel: bound, port: boundPort, connections: tracker, group: group)
    }

    private static func bind(
        group: MultiThreadedEventLoopGroup, port: Int, http2: Bool, context: NIOSSLContext, tracker: ConnectionTracker,
        maximumBodyBytes: Int, route: @escaping @Sendable (EmulatorRequest) -> EmulatorReply
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard tracker.track(channel) else { return channel.close() }
                let makeHandler = { @Sendable (stream: any Channel) -> EventLoopFuture<Void> in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(
                            EmulatorRequestHandler(route: route, maximumBodyBytes: maximumBodyBytes))
                    }
                }
                do {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
                if http2 {
                    return channel.configureCommonHTTPServerPipeline(makeHandler)
                }
                return channel.pipeline.configureHTTPServerPipeline().flatMap { makeHandler(channel) }
            }
            .bind(host: "127.0.0.1", port: port)
            .get()
    }

    /// Stops listening and closes every open connection; a second call does nothing.
    func shutdown() async throws {
        guard try await connections.shutdown(listener: channel) else { return }
        try await group?.shutdownGracefully()
    }
}

/// Collects one request at a time (per HTTP/1.1 connection or HTTP/2 stream) and answers it.
private final class EmulatorRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let route: @Sendable (EmulatorRequest) -> EmulatorReply
    private let maximumBodyBytes: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(route: @escaping @Sendable (EmulatorRequest) -> EmulatorReply, maximumBodyBytes: Int) {
        self.route = route
        self.maximumBodyBytes = maximumBodyBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
            tooLarge = false
        case .body(let chunk):
            if body.count + chunk.readableBytes > maximumBodyBytes {
                tooLarge = true
            } else {
                body.append(contentsOf: chunk.readableBytesView)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        if tooLarge {
            write(EmulatorResponse(status: 413), for: head, context: context)
            return
        }
        let target = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let request = EmulatorRequest(
            method: head.method.rawValue, path: String(target.first ?? ""),
            query: target.count > 1 ? String(target[1]) : nil,
            headers: head.headers.map { (name: $0.name.lowercased(), value: $0.value) }, body: body,
            version: head.version.major == 2 ? "HTTP/2.0" : "HTTP/1.1")
        switch route(request) {
        case .now(let response):
            write(response, for: head, context: context)
        case .later(let work):
            let promise = context.eventLoop.makePromise(of: EmulatorResponse.self)
            promise.completeWithTask { await work() }
            promise.futureResult.assumeIsolated().whenSuccess { response in
                self.write(response, for: head, context: context)
            }
        }
    }

    private func write(_ response: EmulatorResponse, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(response.headers)
        headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
        let http1 = request.version.major < 2
        let keepAlive = request.isKeepAlive
        if http1 && !keepAlive { headers.replaceOrAdd(name: "connection", value: "close") }
        let head = HTTPResponseHead(
            version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))),
                promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if http1 && !keepAlive { context.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
