import HubEmulators
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A TLS HTTP/2 server on 127.0.0.1 whose behaviour each test scripts, and which counts what it sees:
/// connections, streams in flight per connection, streams the client reset.
final class ScriptedHTTP2Server: Sendable {
    /// What the server does with a request.
    enum Behaviour: Sendable {
        /// 200 with body `ok`, after `delay`.
        case answer(delay: TimeAmount = .zero)
        /// Never answers.
        case silence
        /// GOAWAY whose last stream is below this request's (so it is refused), then closes.
        case goAwayRefusing
        /// `RST_STREAM REFUSED_STREAM`.
        case refuse
        /// Answers, then closes the connection.
        case answerAndClose
        /// 200 once ``releaseHeld()`` is called.
        case held
    }

    struct Statistics {
        var connections = 0
        var requests = 0
        /// Streams the client closed before the server answered.
        var abandoned = 0
        var active: [ObjectIdentifier: Int] = [:]
        var peakActive: [ObjectIdentifier: Int] = [:]
        var connectionNumbers: [ObjectIdentifier: Int] = [:]
        /// The header block of the last request, in wire order, as `name: value`.
        var lastRequestHeaders: [String] = []
    }

    let authority: TestCertificateAuthority
    let port: Int
    private let channel: any Channel
    private let statistics: Mutex<Statistics>
    /// Chooses the behaviour for a request: (number of its connection from 1, request number on it from 1).
    private let script: Mutex<@Sendable (Int, Int) -> Behaviour>

    var snapshot: Statistics { statistics.withLock { $0 } }

    /// The answers of `.held` requests, waiting for ``releaseHeld()``.
    private let heldAnswers = Mutex<[@Sendable () -> Void]>([])

    /// Requests held by `.held` now.
    var heldCount: Int { heldAnswers.withLock { $0.count } }

    /// Answers every request held so far. Change the script first, or the requests that come next
    /// are held too.
    func releaseHeld() {
        for answer in heldAnswers.withLock({ held in
            defer { held = [] }; return held
        }) { answer() }
    }

    fileprivate func hold(_ answer: @escaping @Sendable () -> Void) { heldAnswers.withLock { $0.append(answer) } }

    fileprivate func recordHeaders(_ headers: HPACKHeaders) {
        statistics.withLock { $0.lastRequestHeaders = headers.map { "\($0.name): \($0.value)" } }
    }

    func setScript(_ script: @escaping @Sendable (_ connection: Int, _ request: Int) -> Behaviour) {
        self.script.withLock { $0 = script }
    }

    private init(authority: TestCertificateAuthority, port: Int, channel: any Channel) {
        self.authority = authority
        self.port = port
        self.channel = channel
        self.statistics = Mutex(Statistics())
        self.script = Mutex({ _, _ in .answer() })
    }

    static func start(maxConcurrentStreams: Int = 100) async throws -> ScriptedHTTP2Server {
        let authority = try TestCertificateAuthority(commonName: "HTTP/2 test CA")
        let context = try NIOSSLContext(
            configuration: try authority.issue(dnsNames: ["localhost"]).serverTLSConfiguration(alpn: ["h2"]))
        let box = Box()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)
                    ]
                    let server = box.server!
                    let number = server.statistics.withLock { statistics in
                        statistics.connections += 1
                        statistics.connectionNumbers[ObjectIdentifier(channel)] = statistics.connections
                        return statistics.connections
                    }
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: configuration, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                ScriptedStreamHandler(server: server, connection: channel, connectionNumber: number))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = ScriptedHTTP2Server(authority: authority, port: channel.localAddress!.port!, channel: channel)
        box.server = server
        return server
    }

    func shutdown() async throws {
        try await channel.close()
    }

    /// Counts a request and chooses what to do with it.
    fileprivate func arrived(on connection: any Channel, number: Int) -> Behaviour {
        let key = ObjectIdentifier(connection)
        statistics.withLock { statistics in
            statistics.requests += 1
            statistics.active[key, default: 0] += 1
            statistics.peakActive[key] = max(statistics.peakActive[key] ?? 0, statistics.active[key]!)
        }
        return script.withLock { $0 }(number, requestCount(on: key))
    }

    private let perConnection = Mutex<[ObjectIdentifier: Int]>([:])

    private func requestCount(on key: ObjectIdentifier) -> Int {
        perConnection.withLock { counts in
            counts[key, default: 0] += 1
            return counts[key]!
        }
    }

    fileprivate func finished(on connection: any Channel, answered: Bool) {
        statistics.withLock { statistics in
            statistics.active[ObjectIdentifier(connection), default: 1] -= 1
            if !answered { statistics.abandoned += 1 }
        }
    }

    private final class Box: @unchecked Sendable {
        var server: ScriptedHTTP2Server?
    }
}

/// Serves one stream of the scripted server.
private final class ScriptedStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let server: ScriptedHTTP2Server
    private let connection: any Channel
    private let connectionNumber: Int
    private var counted = false
    private var answered = false

    init(server: ScriptedHTTP2Server, connection: any Channel, connectionNumber: Int) {
        self.server = server
        self.connection = connection
        self.connectionNumber = connectionNumber
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let ended: Bool
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            ended = frame.endStream
            server.recordHeaders(frame.headers)
        case .data(let frame): ended = frame.endStream
        default: ended = false
        }
        guard ended, !counted else { return }
        counted = true
        let behaviour = server.arrived(on: connection, number: connectionNumber)
        switch behaviour {
        case .answer(let delay):
            if delay == .zero {
                answer(context: context)
            } else {
                context.eventLoop.assumeIsolated().scheduleTask(in: delay) { self.answer(context: context) }
            }
        case .silence:
            break
        case .refuse:
            answered = true
            context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
        case .goAwayRefusing:
            answered = true
            let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? 1
            let lastStreamID = HTTP2StreamID(max(0, Int(streamID) - 2))
            let goAway = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))
            let connection = self.connection
            connection.writeAndFlush(goAway).whenComplete { _ in connection.close(promise: nil) }
        case .held:
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            server.hold { bound.eventLoop.execute { bound.value.handler.answer(context: bound.value.context) } }
        case .answerAndClose:
            answer(context: context)
            let connection = self.connection
            context.eventLoop.scheduleTask(in: .milliseconds(20)) { connection.close(promise: nil) }
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard context.channel.isActive, !answered else { return }
        answered = true
        context.write(wrapOutboundOut(.headers(.init(headers: [":status": "200"]))), promise: nil)
        let body = context.channel.allocator.buffer(string: "ok")
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted { server.finished(on: connection, answered: answered) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
