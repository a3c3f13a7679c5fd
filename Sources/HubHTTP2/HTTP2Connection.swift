import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// What a connection reports to its pool, on its event loop.
enum HTTP2ConnectionEvent: Sendable {
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` changed after the first SETTINGS.
    case streamLimit(Int)
    /// GOAWAY (its code and debug data), or stream IDs used up: no new streams on this connection.
    case goAway(String)
    /// The connection is closing: an error, an unanswered PING, or the peer closed it.
    case closing((any Error & Sendable)?)
}

/// One HTTP/2 connection (over TLS with ALPN `h2`, or cleartext with prior knowledge) that runs
/// requests on streams. It does not count streams: its ``HTTP2ConnectionPool`` does.
///
/// Pipeline: [TLS] → ``HTTP2WireHandler`` (ALPN check, I/O clock, one flush per loop tick) →
/// `NIOHTTP2Handler` without a stream multiplexer → ``HTTP2Streams`` (every request's stream) →
/// ``HTTP2ConnectionMonitor`` (SETTINGS, GOAWAY, PING).
final class HTTP2Connection: Sendable {
    let id: Int
    let channel: any Channel
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` of the server's first SETTINGS (`Int.max` when absent).
    let initialStreamLimit: Int
    private let streams: NIOLoopBound<HTTP2Streams>

    private init(id: Int, channel: any Channel, streams: NIOLoopBound<HTTP2Streams>, streamLimit: Int) {
        self.id = id
        self.channel = channel
        self.streams = streams
        self.initialStreamLimit = streamLimit
    }

    /// Settings one connection needs, taken from the client's configuration.
    struct Options: Sendable {
        var tls: NIOSSLContext?
        var pingInterval: TimeAmount
        var pingTimeout: TimeAmount
        var bodyLimit: Int
        var indexedOnce: [String]
        /// Our SETTINGS: no server push, the stream and header-list limits we accept, and stream
        /// windows past the body limit (so that no stream needs a WINDOW_UPDATE).
        var http2 = NIOHTTP2Handler.ConnectionConfiguration()

        init(configuration: HTTP2Client.Configuration, tls: NIOSSLContext?) {
            self.tls = tls
            pingInterval = .nanoseconds(HTTP2Client.nanoseconds(configuration.pingInterval))
            pingTimeout = .nanoseconds(HTTP2Client.nanoseconds(configuration.pingTimeout))
            bodyLimit = configuration.maximumResponseBodyBytes
            indexedOnce = configuration.headersIndexedOnce
            let window = min(max(65_535, bodyLimit + 1), Int(Int32.max))
            let ours: [(HTTP2SettingsParameter, Int)] = [
                (.enablePush, 0), (.maxConcurrentStreams, configuration.maximumStreamsPerConnection),
                (.maxHeaderListSize, HPACKDecoder.defaultMaxHeaderListSize), (.initialWindowSize, window),
            ]
            http2.initialSettings = ours.map { HTTP2Setting(parameter: $0.0, value: $0.1) }
            if !configuration.validatesHeaders {
                http2.headerBlockValidation = .disabled
                http2.contentLengthValidation = .disabled
            }
        }
    }

    /// Connects on `eventLoop`, handshakes, and waits for the server's first SETTINGS frame.
    /// - Throws: ``HTTP2ClientError/Code/connectionFailed`` when a step fails or `deadline` passes.
    static func open(
        id: Int, origin: HTTP2Origin, eventLoop: any EventLoop, options: Options, deadline: NIODeadline,
        events: @escaping @Sendable (Int, HTTP2ConnectionEvent) -> Void
    ) async throws(HTTP2ClientError) -> HTTP2Connection {
        do {
            let (channel, streams, settings) = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(max(deadline - NIODeadline.now(), TimeAmount.milliseconds(1)))
                .connect(host: origin.host, port: origin.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try configure(channel, origin: origin, options: options) { event in events(id, event) }
                    }
                }
            let expiry = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
            defer { expiry.cancel() }
            do {
                let limit = try await settings.get()
                return HTTP2Connection(id: id, channel: channel, streams: streams, streamLimit: limit)
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
        _ channel: any Channel, origin: HTTP2Origin, options: Options,
        report: @escaping (HTTP2ConnectionEvent) -> Void
    ) throws -> (any Channel, NIOLoopBound<HTTP2Streams>, EventLoopFuture<Int>) {
        let pipeline = channel.pipeline.syncOperations
        if let tls = options.tls {
            try pipeline.addHandler(
                NIOSSLClientHandler(context: tls, serverHostname: origin.isIPAddress ? nil : origin.host))
        }
        let shared = HTTP2ConnectionShared()
        try pipeline.addHandler(HTTP2WireHandler(shared: shared, origin: origin, expectsALPN: options.tls != nil))
        try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: options.http2))
        let streams = HTTP2Streams(
            shared: shared, bodyLimit: options.bodyLimit, indexedOnce: options.indexedOnce, report: report)
        try pipeline.addHandler(streams)
        let settings = channel.eventLoop.makePromise(of: Int.self)
        try pipeline.addHandler(
            HTTP2ConnectionMonitor(
                shared: shared, settings: settings, pingInterval: options.pingInterval,
                pingTimeout: options.pingTimeout, report: report))
        return (channel, NIOLoopBound(streams, eventLoop: channel.eventLoop), settings.futureResult)
    }

    /// Runs one exchange on a new stream; `.refused` also when the stream could not be opened.
    func exchange(
        headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline
    ) async -> Result<HTTP2Response, HTTP2StreamEnd> {
        let streams = self.streams
        let eventLoop = channel.eventLoop
        // A continuation rather than a promise and its future: one allocation and hop fewer per request.
        return await withUnsafeContinuation { resume in
            let request = HTTP2StreamRequest(headers: headers, body: body, deadline: deadline, resume: resume)
            eventLoop.execute { streams.value.start(request) }
        }
    }

    func close() {
        channel.close(promise: nil)
    }
}
