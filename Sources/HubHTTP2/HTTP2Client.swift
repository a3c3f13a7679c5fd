public import Logging
public import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP/2 client for provider APIs that take many small requests: one or a few long-lived
/// connections per origin, each request a stream on one of them.
///
/// - Streams per connection never exceed the server's `SETTINGS_MAX_CONCURRENT_STREAMS`; when all
///   connections are full, another opens (up to ``Configuration/maximumConnectionsPerOrigin``).
/// - Every request has a deadline covering the wait for a stream and the whole exchange; at the
///   deadline its stream is reset and it fails with ``HTTP2ClientError/Code/timedOut``.
/// - After GOAWAY or a close, new requests go to a new connection. A stream the server refused
///   (`REFUSED_STREAM`, dropped by GOAWAY) was not processed and is retried on a fresh connection.
/// - Idle connections are PINGed; one that does not answer is closed.
/// - A new connection opens only once the others have answered once (APNs starts a connection at
///   one stream), and on the event loop that runs the fewest of the origin's connections.
/// - TLS with the system's or given trust roots, and a client certificate when configured
///   (``Configuration/clientIdentity``). HPACK indexing follows the request's hints
///   (``HTTP2Request/pathIndexing``, each header's `indexing`, ``Configuration/headersIndexedOnce``).
/// - Every stream of a connection runs in one channel handler, without a channel per stream; the
///   writes of one event-loop tick share one flush.
/// - No redirects, cookies or HTTP/1.1: a server that does not offer `h2` by ALPN is an error.
///
/// ```swift
/// let client = try HTTP2Client(configuration: .init(trustRootsPEM: [caPEM]))
/// let (origin, path) = try HTTP2Origin.split(url: "https://fcm.googleapis.com/v1/projects/p/messages:send")
/// var request = HTTP2Request(path: path, headers: ["content-type": "application/json"])
/// request.body = ByteBuffer(string: #"{"message":{}}"#)
/// let response = try await client.execute(request, to: origin, timeout: .seconds(15))
/// await client.shutdown()
/// ```
public final class HTTP2Client: Sendable {
    /// Trust, limits and timeouts; the defaults suit Google's and Apple's push APIs.
    public struct Configuration: Sendable {
        /// The certificate authorities server certificates must chain to (the system's by default).
        public var trustRoots: HTTP2TrustRoots
        /// PEM certificates trusted in addition to ``trustRoots`` (a test CA).
        public var trustRootsPEM: [String]
        /// The TLS client certificate to present, for servers that authenticate clients by certificate.
        public var clientIdentity: HTTP2ClientIdentity?
        /// Connections to one origin at most.
        public var maximumConnectionsPerOrigin: Int
        /// Streams per connection at most, whatever the server allows.
        public var maximumStreamsPerConnection: Int
        /// Longest wait for TCP, TLS and the server's first SETTINGS.
        public var connectTimeout: Duration
        /// A connection without I/O for this long is PINGed.
        public var pingInterval: Duration
        /// A PING without an ACK for this long closes the connection.
        public var pingTimeout: Duration
        /// Larger response bodies fail with ``HTTP2ClientError/Code/responseTooLarge``.
        public var maximumResponseBodyBytes: Int
        /// How often a refused stream is sent again (on a fresh connection) before giving up.
        public var refusedStreamRetries: Int
        /// Header fields that requests send without indexing and that each connection indexes the
        /// first time it sends them, so that later requests refer to the name in the table (Apple
        /// asks this of `apns-id`, `apns-expiration` and `apns-collapse-id`).
        public var headersIndexedOnce: [String]
        /// Whether NIO checks every header block sent and received. A caller that checks the values
        /// it sends (APNs' transport does) saves a tenth of a small request's cost by turning it off.
        public var validatesHeaders: Bool

        public init(
            trustRoots: HTTP2TrustRoots = .system, trustRootsPEM: [String] = [],
            clientIdentity: HTTP2ClientIdentity? = nil, maximumConnectionsPerOrigin: Int = 4,
            maximumStreamsPerConnection: Int = 100, connectTimeout: Duration = .seconds(10),
            pingInterval: Duration = .seconds(60), pingTimeout: Duration = .seconds(10),
            maximumResponseBodyBytes: Int = 256 * 1024, refusedStreamRetries: Int = 2,
            headersIndexedOnce: [String] = [], validatesHeaders: Bool = true
        ) {
            self.trustRoots = trustRoots
            self.trustRootsPEM = trustRootsPEM
            self.clientIdentity = clientIdentity
            self.maximumConnectionsPerOrigin = maximumConnectionsPerOrigin
            self.maximumStreamsPerConnection = maximumStreamsPerConnection
            self.connectTimeout = connectTimeout
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.maximumResponseBodyBytes = maximumResponseBodyBytes
            self.refusedStreamRetries = refusedStreamRetries
            self.headersIndexedOnce = headersIndexedOnce
            self.validatesHeaders = validatesHeaders
        }
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let tls: NIOSSLContext
    private let logger: Logger
    private let pools = Mutex<(byOrigin: [HTTP2Origin: HTTP2ConnectionPool], isShutdown: Bool)>(([:], false))

    /// - Parameters:
    ///   - configuration: trust, limits and timeouts.
    ///   - eventLoopGroup: where connections run (spread over its loops); `nil` is NIO's shared
    ///     singleton.
    ///   - logger: where GOAWAYs, failed connects and recoveries are reported.
    /// - Throws: ``HTTP2ClientError/Code/invalidConfiguration`` when the trust roots are not PEM
    ///   certificates or the client identity does not fit.
    public init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: (any EventLoopGroup)? = nil,
        logger: Logger = Logger(label: "hub.http2")
    ) throws(HTTP2ClientError) {
        self.tls = try configuration.makeTLSContext()
        self.configuration = configuration
        self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.logger = logger
    }

    /// Sends `request` to `origin` and returns the complete response, whatever its status.
    ///
    /// - Parameters:
    ///   - request: method, path, headers and body; the client adds the pseudo-headers.
    ///   - origin: where it goes; each origin has connections of its own.
    ///   - timeout: the longest the whole call may take, waiting for a stream included.
    /// - Throws: ``HTTP2ClientError``: `.timedOut`, `.connectionFailed`, `.connectionLost`,
    ///   `.refused` (after ``Configuration/refusedStreamRetries``), `.responseTooLarge`, `.shutdown`.
    public func execute(
        _ request: HTTP2Request, to origin: HTTP2Origin, timeout: Duration
    ) async throws(HTTP2ClientError) -> HTTP2Response {
        try await execute(request.prepared(for: origin), timeout: timeout)
    }

    /// Sends a request whose header block is complete (see ``HTTP2PreparedRequest``) to its origin
    /// and returns the complete response, whatever its status. The block goes out as it is.
    ///
    /// - Parameters:
    ///   - request: the header block and body; its ``HTTP2PreparedRequest/origin`` says where it goes.
    ///   - timeout: the longest the whole call may take, waiting for a stream included.
    /// - Throws: as ``execute(_:to:timeout:)``.
    public func execute(
        _ request: HTTP2PreparedRequest, timeout: Duration
    ) async throws(HTTP2ClientError) -> HTTP2Response {
        let deadline = NIODeadline.now() + .nanoseconds(Self.nanoseconds(timeout))
        let origin = request.origin
        let pool = try pool(for: origin)
        let headers = request.headers
        var retries = 0
        while true {
            let connection = try await pool.lease(deadline: deadline)
            let result = await connection.exchange(headers: headers, body: request.body, deadline: deadline)
            pool.release(connection)
            switch result {
            case .success(var response):
                response.connection = HTTP2ConnectionKey(pool: pool, id: connection.id)
                return response
            case .failure(.refused(let reason)):
                // Not processed: the server will not take more on that connection; use a fresh one.
                pool.retire(connection.id)
                guard retries < configuration.refusedStreamRetries, NIODeadline.now() < deadline else {
                    throw HTTP2ClientError(.refused, "\(origin) refused the request's stream", underlying: reason)
                }
                retries += 1
                logger.debug("stream refused; sending again on another connection", metadata: ["origin": "\(origin)"])
            case .failure(let end):
                // A stream lost mid-exchange leaves its connection in doubt: no new streams on it.
                if case .lost = end { pool.retire(connection.id) }
                throw Self.error(for: end, origin: origin)
            }
        }
    }

    /// Sends no new requests on the connection that answered `response`; it closes once its
    /// running requests are done. For answers that say the connection is spent (APNs'
    /// `IdleTimeout`, a 503 that asks to reconnect).
    public func retireConnection(of response: HTTP2Response) {
        guard let key = response.connection else { return }
        key.pool.retire(key.id)
    }

    /// Fails waiting requests, lets running ones finish for up to `grace`, then closes every
    /// connection. Requests after this fail with ``HTTP2ClientError/Code/shutdown``.
    public func shutdown(grace: Duration = .seconds(5)) async {
        let all = pools.withLock { pools in
            pools.isShutdown = true
            return Array(pools.byOrigin.values)
        }
        for pool in all { await pool.shutdown(grace: grace) }
    }

    deinit {
        for pool in pools.withLock({ $0.byOrigin.values }) { pool.closeAll() }
    }

    /// Open connections to `origin`, for tests and diagnostics.
    public func connectionCount(to origin: HTTP2Origin) -> Int {
        connections(to: origin).count
    }

    /// The connections to `origin` now, for tests and diagnostics.
    public func connections(to origin: HTTP2Origin) -> [HTTP2ConnectionInfo] {
        pools.withLock { $0.byOrigin[origin] }?.snapshot ?? []
    }

    private func pool(for origin: HTTP2Origin) throws(HTTP2ClientError) -> HTTP2ConnectionPool {
        let found: HTTP2ConnectionPool? = pools.withLock { pools in
            if pools.isShutdown { return nil }
            if let pool = pools.byOrigin[origin] { return pool }
            let options = HTTP2Connection.Options(configuration: configuration, tls: origin.isSecure ? tls : nil)
            let pool = HTTP2ConnectionPool(
                origin: origin, group: group, options: options,
                connectTimeout: .nanoseconds(Self.nanoseconds(configuration.connectTimeout)),
                maximumConnections: configuration.maximumConnectionsPerOrigin,
                streamCap: configuration.maximumStreamsPerConnection, logger: logger)
            pools.byOrigin[origin] = pool
            return pool
        }
        guard let found else { throw HTTP2ClientError(.shutdown, "the HTTP/2 client is shut down") }
        return found
    }

    private static func error(for end: HTTP2StreamEnd, origin: HTTP2Origin) -> HTTP2ClientError {
        switch end {
        case .timedOut:
            HTTP2ClientError(.timedOut, "\(origin) did not answer before the deadline; the stream was reset")
        case .tooLarge(let limit):
            HTTP2ClientError(.responseTooLarge, "the response of \(origin) exceeds \(limit) bytes")
        case .lost(let error as HTTP2ClientError):
            error
        case .lost(let error):
            HTTP2ClientError(.connectionLost, "the stream to \(origin) ended without a response", underlying: error)
        case .refused(let error):
            HTTP2ClientError(.refused, "\(origin) refused the stream", underlying: error)
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// One connection of a client, as ``HTTP2Client/connections(to:)`` reports it.
public struct HTTP2ConnectionInfo: Sendable, Hashable {
    public var id: Int
    /// Streams allowed at once: the server's `SETTINGS_MAX_CONCURRENT_STREAMS`, capped by the configuration.
    public var streamLimit: Int
    /// Streams running now.
    public var activeStreams: Int
    /// Whether it takes no new streams (GOAWAY, a refused or lost stream, closing, retired).
    public var isRetired: Bool
    /// The event loop it runs on.
    public var eventLoop: ObjectIdentifier
}
