import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// What a connection reports to its pool, on its event loop.
enum HTTP2ConnectionEvent: Sendable {
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` changed after the first SETTINGS.
    case streamLimit(Int)
    /// GOAWAY: the server takes no new streams on this connection (NIO refuses the ones it dropped).
    case goAway(HTTP2ErrorCode)
    /// The connection is closing: an error, an unanswered PING, or the peer closed it.
    case closing((any Error & Sendable)?)
}

/// One HTTP/2 connection (over TLS with ALPN `h2`, or cleartext with prior knowledge) that runs
/// requests on streams. It does not count streams: its ``HTTP2ConnectionPool`` does.
///
/// Pipeline: [TLS] → ``HTTP2WireHandler`` (ALPN check, I/O clock, one flush per loop tick) →
/// `NIOHTTP2Handler` with its inline multiplexer → ``HTTP2ConnectionMonitor`` (SETTINGS, GOAWAY,
/// PING). Each request gets a stream channel with an ``HTTP2StreamExchange``.
final class HTTP2Connection: Sendable {
    let id: Int
    let channel: any Channel
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` of the server's first SETTINGS (`Int.max` when absent).
    let initialStreamLimit: Int
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let shared: NIOLoopBound<HTTP2ConnectionShared>

    private init(
        id: Int, channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, streamLimit: Int,
        shared: NIOLoopBound<HTTP2ConnectionShared>
    ) {
        self.id = id
        self.channel = channel
        self.multiplexer = multiplexer
        self.initialStreamLimit = streamLimit
        self.shared = shared
    }

    /// Settings one connection needs, taken from the client's configuration.
    struct Options: Sendable {
        var tls: NIOSSLContext?
        var pingInterval: TimeAmount
        var pingTimeout: TimeAmount
        /// Our SETTINGS: no server push, and the stream and header-list limits we accept.
        var http2 = NIOHTTP2Handler.ConnectionConfiguration()

        init(tls: NIOSSLContext?, pingInterval: TimeAmount, pingTimeout: TimeAmount, streamLimit: Int) {
            self.tls = tls
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            let ours: [(HTTP2SettingsParameter, Int)] = [
                (.enablePush, 0), (.maxConcurrentStreams, streamLimit),
                (.maxHeaderListSize, HPACKDecoder.defaultMaxHeaderListSize),
            ]
            http2.initialSettings = ours.map { HTTP2Setting(parameter: $0.0, value: $0.1) }
        }
    }

    /// Connects, handshakes, and waits for the server's first SETTINGS frame.
    /// - Throws: ``HTTP2ClientError/Code/connectionFailed`` when a step fails or `deadline` passes.
    static func open(
        id: Int, origin: HTTP2Origin, group: any EventLoopGroup, options: Options, deadline: NIODeadline,
        events: @escaping @Sendable (Int, HTTP2ConnectionEvent) -> Void
    ) async throws(HTTP2ClientError) -> HTTP2Connection {
        do {
            let (channel, multiplexer, settings, shared) = try await ClientBootstrap(group: group)
                .connectTimeout(max(deadline - NIODeadline.now(), TimeAmount.milliseconds(1)))
                .connect(host: origin.host, port: origin.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try configure(channel, origin: origin, id: id, options: options, events: events)
                    }
                }
            let expiry = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
            defer { expiry.cancel() }
            do {
                let limit = try await settings.get()
                return HTTP2Connection(
                    id: id, channel: channel, multiplexer: multiplexer, streamLimit: limit, shared: shared)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        } catch let error as HTTP2ClientError {
            throw error
        } catch {
            throw HTTP2ClientError(.connectionFailed, "cannot connect to \(origin)", underlying: error)
        }
    }

    private static func configure(
        _ channel: any Channel, origin: HTTP2Origin, id: Int, options: Options,
        events: @escaping @Sendable (Int, HTTP2ConnectionEvent) -> Void
    ) throws -> (
        any Channel, NIOHTTP2Handler.StreamMultiplexer, EventLoopFuture<Int>, NIOLoopBound<HTTP2ConnectionShared>
    ) {
        let pipeline = channel.pipeline.syncOperations
        if let tls = options.tls {
            try pipeline.addHandler(
                NIOSSLClientHandler(context: tls, serverHostname: origin.isIPAddress ? nil : origin.host))
        }
        let shared = HTTP2ConnectionShared()
        try pipeline.addHandler(HTTP2WireHandler(shared: shared, origin: origin, expectsALPN: options.tls != nil))
        // Push is disabled in our SETTINGS; a server that pushes anyway gets its streams closed.
        let multiplexer = try pipeline.configureHTTP2Pipeline(
            mode: .client, connectionConfiguration: options.http2, streamConfiguration: .init(),
            inboundStreamInitializer: { $0.close() })
        let settings = channel.eventLoop.makePromise(of: Int.self)
        try pipeline.addHandler(
            HTTP2ConnectionMonitor(
                shared: shared, settings: settings, pingInterval: options.pingInterval,
                pingTimeout: options.pingTimeout, report: { event in events(id, event) }))
        return (channel, multiplexer, settings.futureResult, NIOLoopBound(shared, eventLoop: channel.eventLoop))
    }

    /// Runs one exchange on a new stream.
    /// - Throws: ``HTTP2StreamEnd``; `.refused` also when the stream could not be opened at all.
    func exchange(
        headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline, bodyLimit: Int
    ) async throws(HTTP2StreamEnd) -> HTTP2Response {
        let result = channel.eventLoop.makePromise(of: HTTP2Response.self)
        let opened = channel.eventLoop.makePromise(of: (any Channel).self)
        // Without a stream nothing reached the server, so the request may go elsewhere.
        opened.futureResult.whenFailure { error in
            result.fail(HTTP2StreamEnd.refused(HTTP2ClientError(.refused, "no stream: \(error)")))
        }
        let shared = self.shared
        multiplexer.createStreamChannel(promise: opened) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(
                    HTTP2StreamExchange(
                        headers: headers, body: body, deadline: deadline, bodyLimit: bodyLimit,
                        connection: shared.value, result: result))
            }
        }
        do {
            return try await result.futureResult.get()
        } catch let end as HTTP2StreamEnd {
            throw end
        } catch {
            throw .lost(error)
        }
    }

    func close() {
        channel.close(promise: nil)
    }
}
