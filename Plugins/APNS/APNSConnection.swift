import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2-over-TLS connection to an APNs server, multiplexing requests as streams.
///
/// The pipeline is TLS (ALPN `h2`) → ``APNSFlushCoalescer`` → `NIOHTTP2Handler` (no stream
/// multiplexer) → ``APNSStreams``, which runs every request as a stream of its own →
/// ``APNSConnectionHandler`` for stream 0. The pool decides how many streams run at once; this type
/// only opens the connection and runs streams on it.
final class APNSConnection: Sendable {
    let id: Int
    let server: APNSTransport.Server
    let channel: any Channel
    private let streams: NIOLoopBound<APNSStreams>
    /// The server's stream limit from its first SETTINGS frame.
    let initialMaxConcurrentStreams: Int
    private let goAway: APNSGoAwayRecord

    private init(
        id: Int, server: APNSTransport.Server, channel: any Channel, streams: NIOLoopBound<APNSStreams>,
        initialMaxConcurrentStreams: Int, goAway: APNSGoAwayRecord
    ) {
        self.goAway = goAway
        self.id = id
        self.server = server
        self.channel = channel
        self.streams = streams
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
    }

    /// Connects, completes the TLS handshake and waits for the server's first SETTINGS frame.
    ///
    /// - Throws: ``APNSError/Code/connectionFailed`` when any step fails or `deadline` passes.
    static func connect(
        id: Int, server: APNSTransport.Server, tls: NIOSSLContext, configuration: APNSTransport.Configuration,
        delegate: any APNSConnectionDelegate, eventLoop: any EventLoop, deadline: NIODeadline
    ) async throws(APNSError) -> APNSConnection {
        let remaining = max(deadline - .now(), .milliseconds(1))
        let hostname = server.isIPAddress ? nil : server.host
        do {
            let goAway = APNSGoAwayRecord()
            let (channel, streams, ready) = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(remaining)
                .connect(host: server.host, port: server.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try Self.configure(
                            channel, tls: tls, hostname: hostname, id: id, configuration: configuration,
                            delegate: delegate, goAway: goAway)
                    }
                }
            let timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
            defer { timer.cancel() }
            do {
                let maximum = try await ready.get()
                return APNSConnection(
                    id: id, server: server, channel: channel, streams: streams,
                    initialMaxConcurrentStreams: maximum, goAway: goAway)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        } catch {
            if let error = error as? APNSError { throw error }
            throw APNSError(.connectionFailed, "cannot connect to APNs at \(server)", underlying: error)
        }
    }

    private static func configure(
        _ channel: any Channel, tls: NIOSSLContext, hostname: String?, id: Int,
        configuration: APNSTransport.Configuration, delegate: any APNSConnectionDelegate, goAway: APNSGoAwayRecord
    ) throws -> (any Channel, NIOLoopBound<APNSStreams>, EventLoopFuture<Int>) {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: hostname))
        let activity = APNSIOActivity()
        try pipeline.addHandler(APNSFlushCoalescer(activity: activity))
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
        ]
        // The request headers are checked when the request is built (APNSRequest.headerProblem) and
        // the answer's are read field by field: NIO validating every header block again (and the
        // content-length of bodies nobody declares a length for) cost a tenth of each request.
        connection.headerBlockValidation = .disabled
        connection.contentLengthValidation = .disabled
        try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: connection))
        let streams = APNSStreams(id: id, goAway: goAway, delegate: delegate)
        try pipeline.addHandler(streams)
        let ready = channel.eventLoop.makePromise(of: Int.self)
        try pipeline.addHandler(
            APNSConnectionHandler(
                id: id, delegate: delegate, activity: activity, pingInterval: configuration.pingInterval,
                pingTimeout: configuration.pingTimeout, goAway: goAway, ready: ready))
        return (channel, NIOLoopBound(streams, eventLoop: channel.eventLoop), ready.futureResult)
    }

    /// Runs one request on a new stream.
    ///
    /// - Throws: ``APNSStreamFailure``: `.refused` when the server did not process it, `.timedOut`
    ///   when `deadline` passed, `.lost` when the stream or connection ended first.
    func send(
        headers: HPACKHeaders, body: [UInt8], deadline: NIODeadline
    ) async throws(APNSStreamFailure)
        -> APNSHTTPResponse
    {
        let body = ByteBuffer(bytes: body)
        let streams = self.streams
        let eventLoop = channel.eventLoop
        do {
            // A continuation rather than a promise and its future: one allocation and hop fewer per request.
            return try await withUnsafeThrowingContinuation { continuation in
                let request = APNSStreamRequest(
                    headers: headers, body: body, deadline: deadline, continuation: continuation)
                eventLoop.execute { streams.value.start(request) }
            }
        } catch {
            throw APNSStreamFailure(error)
        }
    }

    /// Closes the connection; streams still running fail with ``APNSStreamFailure/lost(_:)``.
    func close() {
        channel.close(promise: nil)
    }
}
