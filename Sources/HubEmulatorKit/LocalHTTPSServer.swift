import NIOCore
import NIOHTTP1
import NIOPosix
public import NIOSSL
import Synchronization

/// A tiny HTTPS/1.1 server on 127.0.0.1 that answers every request from a table of canned responses.
///
/// Start one with ``start(tls:)``, set responses with ``setResponse(_:forPath:)``, point a client at
/// `https://localhost:<port>/…` (or `127.0.0.1`), and call ``shutdown()`` when the test is done.
/// Paths without a canned response get `404 Not Found`. Every request's path is recorded and can be
/// read back with ``requestedPaths()``.
///
/// The server runs on `MultiThreadedEventLoopGroup.singleton`, so it owns no threads of its own;
/// ``shutdown()`` closes the listening socket and every open connection.
public final class LocalHTTPSServer: Sendable {
    /// A canned HTTP response.
    public struct Response: Sendable {
        /// The status code, such as 200 or 404.
        public var status: Int
        /// Header fields in order. `content-length` is always set by the server from `body`.
        public var headers: [(String, String)]
        /// The body bytes.
        public var body: [UInt8]

        public init(status: Int = 200, headers: [(String, String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A response whose body is `text` in UTF-8 with the given content type.
        public init(status: Int = 200, contentType: String = "text/plain; charset=utf-8", text: String) {
            self.init(status: status, headers: [("content-type", contentType)], body: Array(text.utf8))
        }

        /// A response whose body is `json` (sent as given, not validated) with `content-type: application/json`.
        public static func json(_ json: String, status: Int = 200) -> Response {
            Response(status: status, contentType: "application/json", text: json)
        }

        static let notFound = Response(status: 404, text: "not found\n")
    }

    /// The TCP port the server listens on (on 127.0.0.1).
    public let port: Int

    private let channel: any Channel
    private let state: ServerState
    private let connections: ConnectionTracker

    private init(channel: any Channel, port: Int, state: ServerState, connections: ConnectionTracker) {
        self.channel = channel
        self.port = port
        self.state = state
        self.connections = connections
    }

    /// Starts a server on 127.0.0.1 with a port chosen by the system.
    ///
    /// - Parameter tls: The server TLS configuration, typically from
    ///   ``TestCertificate/serverTLSConfiguration(alpn:)``. Only HTTP/1.1 is spoken, so offer
    ///   `http/1.1` (or nothing) in ALPN.
    /// - Returns: A running server; the caller must call ``shutdown()``.
    /// - Throws: if the TLS configuration is invalid or the socket cannot be bound.
    public static func start(tls: TLSConfiguration) async throws -> LocalHTTPSServer {
        let sslContext = try NIOSSLContext(configuration: tls)
        let state = ServerState()
        let connections = ConnectionTracker()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard connections.track(channel) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(CannedResponseHandler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw TestCertificateError("the server socket has no local port")
        }
        return LocalHTTPSServer(channel: channel, port: port, state: state, connections: connections)
    }

    /// Serves `response` for requests to `path` (for example `/.well-known/notification-hub.json`),
    /// replacing any earlier response for that path. Takes effect for the next request.
    ///
    /// Paths are matched exactly, without the query string.
    public func setResponse(_ response: Response, forPath path: String) {
        state.withLock { $0.routes[path] = response }
    }

    /// Stops serving `path`; requests to it get 404 again.
    public func removeResponse(forPath path: String) {
        state.withLock { $0.routes[path] = nil }
    }

    /// The paths (without query strings) of all requests received so far, in arrival order.
    public func requestedPaths() -> [String] {
        state.withLock { $0.requestedPaths }
    }

    /// Stops listening and closes every open connection. Calling it again does nothing.
    public func shutdown() async throws {
        _ = try await connections.shutdown(listener: channel)
    }
}

/// The route table and request log, shared between the server object and its connection handlers.
private final class ServerState: Sendable {
    struct Contents {
        var routes: [String: LocalHTTPSServer.Response] = [:]
        var requestedPaths: [String] = []
    }

    private let contents = Mutex(Contents())

    func withLock<Result: Sendable>(_ body: (inout Contents) -> Result) -> Result {
        contents.withLock { body(&$0) }
    }
}

/// Answers each HTTP/1.1 request on one connection from the shared route table.
private final class CannedResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: ServerState
    private var requestHead: HTTPRequestHead?

    init(state: ServerState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
        case .body:
            break  // Request bodies are accepted and ignored.
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = String(head.uri.prefix { $0 != "?" })
        let response = state.withLock { contents in
            contents.requestedPaths.append(path)
            return contents.routes[path] ?? .notFound
        }

        var headers = HTTPHeaders(response.headers)
        headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
        let keepAlive = head.isKeepAlive
        if !keepAlive {
            headers.replaceOrAdd(name: "connection", value: "close")
        }
        let responseHead = HTTPResponseHead(
            version: head.version,
            status: HTTPResponseStatus(statusCode: response.status),
            headers: headers
        )
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if !response.body.isEmpty {
            let buffer = context.channel.allocator.buffer(bytes: response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive {
                context.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS handshake failures (a client that does not trust the CA) and malformed requests end
        // up here; the test on the client side sees the failure, the server just drops the connection.
        context.close(promise: nil)
    }
}
