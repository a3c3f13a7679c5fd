import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2-over-TLS connection to an APNs server, multiplexing requests as streams.
///
/// The pipeline is TLS (ALPN `h2`) → ``APNSFlushCoalescer`` → `NIOHTTP2Handler` with its inline
/// stream multiplexer → ``APNSConnectionHandler``. Each request gets its own stream channel with an
/// ``APNSStreamHandler``. The pool decides how many streams run at once; this type only opens the
/// connection and runs streams on it.
final class APNSConnection: Sendable {
    let id: Int
    let server: APNSTransport.Server
    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// The server's stream limit from its first SETTINGS frame.
    let initialMaxConcurrentStreams: Int
    private let goAway: APNSGoAwayRecord

    private init(
        id: Int, server: APNSTransport.Server, channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer,
        initialMaxConcurrentStreams: Int, goAway: APNSGoAwayRecord
    ) {
        self.goAway = goAway
        self.id = id
        self.server = server
        self.channel = channel
        self.multiplexer = multiplexer
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
    }

    /// Connects, completes the TLS handshake and waits for the server's first SETTINGS frame.
    ///
    /// - Throws: ``APNSError/Code/connectionFailed`` when any step fails or `deadline` passes.
    static func connect(
        id: Int, server: APNSTransport.Server, tls: NIOSSLContext, configuration: APNSTransport.Configuration,
        delegate: any APNSConnectionDelegate, deadline: NIODeadline
    ) async throws(APNSError) -> APNSConnection {
        let remaining = max(deadline - .now(), .milliseconds(1))
        let hostname = server.isIPAddress ? nil : server.host
        do {
            let goAway = APNSGoAwayRecord()
            let (channel, multiplexer, ready) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
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
                    id: id, server: server, channel: channel, multiplexer: multiplexer,
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
    ) throws -> (any Channel, NIOHTTP2Handler.StreamMultiplexer, EventLoopFuture<Int>) {
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
        let multiplexer = try pipeline.configureHTTP2Pipeline(
            mode: .client, connectionConfiguration: connection, streamConfiguration: .init()
        ) { pushed in pushed.close() }
        let ready = channel.eventLoop.makePromise(of: Int.self)
        try pipeline.addHandler(
            APNSConnectionHandler(
                id: id, delegate: delegate, activity: activity, pingInterval: configuration.pingInterval,
                pingTimeout: configuration.pingTimeout, goAway: goAway, ready: ready))
        return (channel, multiplexer, ready.futureResult)
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
        let loop = channel.eventLoop
        let response = loop.makePromise(of: APNSHTTPResponse.self)
        let created = loop.makePromise(of: (any Channel).self)
        // No stream means nothing was sent (the connection closed meanwhile): safe to send elsewhere.
        created.futureResult.whenFailure { _ in response.fail(APNSStreamFailure.refused) }
        multiplexer.createStreamChannel(promise: created) { stream in
            stream.eventLoop.makeCompletedFuture {
                let buffer = stream.allocator.buffer(bytes: body)
                try stream.pipeline.syncOperations.addHandler(
                    APNSStreamHandler(headers: headers, body: buffer, deadline: deadline, promise: response))
            }
        }
        do {
            return try await response.futureResult.get()
        } catch let closed as NIOHTTP2Errors.StreamClosed where goAway.refused(closed.streamID) {
            throw .refused
        } catch {
            throw APNSStreamFailure(error)
        }
    }

    /// Closes the connection; streams still running fail with ``APNSStreamFailure/lost(_:)``.
    func close() {
        channel.close(promise: nil)
    }
}
