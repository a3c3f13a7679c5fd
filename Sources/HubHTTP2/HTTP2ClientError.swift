/// Why an ``HTTP2Client`` request ended without a response.
///
/// ``Code`` says what to do: ``Code/refused`` was certainly not processed by the server and is safe
/// to send again; after ``Code/timedOut`` or ``Code/connectionLost`` the server may or may not have
/// processed it.
public struct HTTP2ClientError: Error, Sendable, CustomStringConvertible {
    /// A kind of failure; a struct with static members so that new kinds are not a breaking change.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The URL is not `https://host[:port]/…` or `http://host[:port]/…`.
        public static let invalidURL = Code(rawValue: "invalidURL")
        /// No connection could be opened: DNS, TCP, TLS, or the server does not speak HTTP/2.
        public static let connectionFailed = Code(rawValue: "connectionFailed")
        /// No complete response before the request's deadline; its stream (if any) was reset.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The server refused the stream (`REFUSED_STREAM`, or it was above a GOAWAY's last stream),
        /// or it could not be opened: nothing was processed. Only returned once retries ran out.
        public static let refused = Code(rawValue: "refused")
        /// The stream or its connection ended before the response was complete.
        public static let connectionLost = Code(rawValue: "connectionLost")
        /// The response body exceeded ``HTTP2Client/Configuration/maximumResponseBodyBytes``.
        public static let responseTooLarge = Code(rawValue: "responseTooLarge")
        /// The client is shut down.
        public static let shutdown = Code(rawValue: "shutdown")
        /// The configuration cannot be used: trust roots that are not PEM certificates, a client
        /// identity that does not open.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for logs; never contains header values (bearer tokens).
    public var message: String
    /// The lower-level error (NIO, TLS), if any.
    public var underlying: (any Error & Sendable)?
    /// For ``Code/connectionFailed`` while the client backs off from failed connects: how long until
    /// it tries to connect again.
    public var retryAfter: Duration?

    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil, retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
