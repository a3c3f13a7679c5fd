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
    /// Limits and timeouts; the defaults suit Google's and Apple's push APIs.
    public struct Configuration: Sendable {
        /// PEM certificates trusted in addition to the system's roots (a test CA).
        public var trustRootsPEM: [String]
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

        public init(
            trustRootsPEM: [String] = [], maximumConnectionsPerOrigin: Int = 4, maximumStreamsPerConnection: Int = 100,
            connectTimeout: Duration = .seconds(10), pingInterval: Duration = .seconds(60),
            pingTimeout: Duration = .seconds(10), maximumResponseBodyBytes: Int = 256 * 1024,
            refusedStreamRetries: Int = 2
        ) {
            self.trustRootsPEM = trustRootsPEM
            self.maximumConnectionsPerOrigin = maximumConnectionsPerOrigin
            self.maximumStreamsPerConnection = maximumStreamsPerConnection
            self.connectTimeout = connectTimeout
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.maximumResponseBodyBytes = maximumResponseBodyBytes
            self.refusedStreamRetries = refusedStreamRetries
        }
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let tls: NIOSSLContext
    private let logger: Logger
    private let pools = Mutex<(byOrigin: [HTTP2Origin: HTTP2ConnectionPool], isShutdown: Bool)>(([:], false))

    /// - Parameter eventLoopGroup: where connections run; `nil` is NIO's shared singleton.
    /// - Throws: ``HTTP2ClientError/Code/connectionFailed`` when a trust root is not a PEM certificate.
    public init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: (any EventLoopGroup)? = nil,
        logger: Logger = Logger(label: "hub.http2")
    ) throws(HTTP2ClientError) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        // A dead peer never sends close_notify; do not hold a closing connection for long.
        tls.shutdownTimeout = .seconds(1)
        do {
            if !configuration.trustRootsPEM.isEmpty {
                let roots = try configuration.trustRootsPEM.flatMap {
                    try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
                }
                tls.additionalTrustRoots = [.certificates(roots)]
            }
            self.tls = try NIOSSLContext(configuration: tls)
        } catch {
            throw HTTP2ClientError(.connectionFailed, "the TLS trust roots cannot be used", underlying: error)
        }
        self.configuration = configuration
        self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.logger = logger
    }

    /// Sends `request` to `origin` and returns the complete response, whatever its status.
    ///
    /// - Parameter timeout: the longest the whole call may take, waiting for a stream included.
    /// - Throws: ``HTTP2ClientError``: `.timedOut`, `.connectionFailed`, `.connectionLost`,
    ///   `.refused` (after ``Configuration/refusedStreamRetries``), `.responseTooLarge`, `.shutdown`.
    public func execute(
        _ request: HTTP2Request, to origin: HTTP2Origin, timeout: Duration
    ) async throws(HTTP2ClientError) -> HTTP2Response {
        let deadline = NIODeadline.now() + .nanoseconds(Self.nanoseconds(timeout))
        let pool = try pool(for: origin)
        let headers = Self.headers(of: request, origin: origin)
        var retries = 0
        while true {
            let connection = try await pool.lease(deadline: deadline)
            do {
                let response = try await connection.exchange(
                    headers: headers, body: request.body, deadline: deadline,
                    bodyLimit: configuration.maximumResponseBodyBytes)
                pool.release(connection)
                return response
            } catch {
                pool.release(connection)
                guard case .refused(let reason) = error else { throw Self.error(for: error, origin: origin) }
                // Not processed: the server will not take more on that connection; use a fresh one.
                pool.retire(connection)
                guard retries < configuration.refusedStreamRetries, NIODeadline.now() < deadline else {
                    throw HTTP2ClientError(.refused, "\(origin) refused the request's stream", underlying: reason)
                }
                retries += 1
                logger.debug("stream refused; sending again on another connection", metadata: ["origin": "\(origin)"])
            }
        }
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
        pools.withLock { $0.byOrigin[origin] }?.snapshot.count ?? 0
    }

    private func pool(for origin: HTTP2Origin) throws(HTTP2ClientError) -> HTTP2ConnectionPool {
        let found: HTTP2ConnectionPool? = pools.withLock { pools in
            if pools.isShutdown { return nil }
            if let pool = pools.byOrigin[origin] { return pool }
            let options = HTTP2Connection.Options(
                tls: origin.isSecure ? tls : nil,
                pingInterval: .nanoseconds(Self.nanoseconds(configuration.pingInterval)),
                pingTimeout: .nanoseconds(Self.nanoseconds(configuration.pingTimeout)),
                streamLimit: configuration.maximumStreamsPerConnection)
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

    /// Pseudo-headers first (RFC 9113 §8.3), then the request's, then `content-length`.
    private static func headers(of request: HTTP2Request, origin: HTTP2Origin) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 5)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: origin.scheme)
        headers.add(name: ":authority", value: origin.authority)
        headers.add(name: ":path", value: request.path)
        headers.add(contentsOf: request.headers)
        if request.body.readableBytes > 0 || request.method == "POST" || request.method == "PUT" {
            headers.add(name: "content-length", value: String(request.body.readableBytes))
        }
        return headers
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
