public import NIOCore
public import NIOHPACK

import struct Foundation.URLComponents

/// Where requests go: scheme, host and port. Each origin gets its own connections.
///
/// `https` is HTTP/2 over TLS, negotiated by ALPN `h2`; `http` is cleartext HTTP/2 with prior
/// knowledge (`h2c`), for local test servers only.
public struct HTTP2Origin: Hashable, Sendable, CustomStringConvertible {
    public var scheme: String {
        didSet { authority = Self.authority(scheme: scheme, host: host, port: port) }
    }
    public var host: String {
        didSet { authority = Self.authority(scheme: scheme, host: host, port: port) }
    }
    public var port: Int {
        didSet { authority = Self.authority(scheme: scheme, host: host, port: port) }
    }
    /// The `:authority` of requests: the host (bracketed when IPv6) and a port that is not the
    /// default. Kept rather than worked out per request: building it cost a request more than its
    /// HPACK encoding of the field.
    public private(set) var authority: String

    public init(scheme: String = "https", host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == "http" ? 80 : 443)
        authority = Self.authority(scheme: scheme, host: host, port: self.port)
    }

    private static func authority(scheme: String, host: String, port: Int) -> String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == (scheme == "https" ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Whether connections use TLS.
    public var isSecure: Bool { scheme == "https" }

    public static func == (lhs: HTTP2Origin, rhs: HTTP2Origin) -> Bool {
        lhs.port == rhs.port && lhs.host == rhs.host && lhs.scheme == rhs.scheme
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(host)
        hasher.combine(port)
    }

    /// Whether ``host`` is an IP address literal (no SNI and no host-name check for those).
    var isIPAddress: Bool {
        host.utf8.contains(UInt8(ascii: ":")) || (!host.isEmpty && host.allSatisfy { $0.isNumber || $0 == "." })
    }

    public var description: String { "\(scheme)://\(authority)" }

    /// Splits an absolute URL into its origin and its path (with the query, if any).
    /// - Throws: ``HTTP2ClientError/Code/invalidURL`` unless it is `http(s)://host[:port][/path]`.
    public static func split(url: String) throws(HTTP2ClientError) -> (origin: HTTP2Origin, path: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty,
            components.user == nil
        else {
            throw HTTP2ClientError(.invalidURL, "\(url) is not an absolute http(s) URL")
        }
        var path = components.percentEncodedPath
        if path.isEmpty { path = "/" }
        if let query = components.percentEncodedQuery { path += "?" + query }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return (HTTP2Origin(scheme: scheme, host: bare, port: components.port), path)
    }
}

/// One request: method, path, headers and a body sent in one piece.
///
/// HPACK indexing hints travel with the headers: a field added with `indexing: .nonIndexable` or
/// `.neverIndexed` stays out of the connection's dynamic table (a bearer token, a device token in
/// ``pathIndexing``), and names in ``HTTP2Client/Configuration/headersIndexedOnce`` are indexed the
/// first time a connection sends them only.
public struct HTTP2Request: Sendable {
    public var method: String
    /// The request target, such as `/v1/projects/p/messages:send`.
    public var path: String
    /// How `:path` is written: `.nonIndexable` for a path that names one device, which would only
    /// evict useful entries from the table.
    public var pathIndexing: HPACKIndexing
    /// Regular (lower-case) headers; the client adds the pseudo-headers and `content-length`.
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(
        method: String = "POST", path: String, pathIndexing: HPACKIndexing = .indexable, headers: HPACKHeaders = [:],
        body: ByteBuffer = ByteBuffer()
    ) {
        self.method = method
        self.path = path
        self.pathIndexing = pathIndexing
        self.headers = headers
        self.body = body
    }
}

extension HTTP2Request {
    /// The request as the client sends it to `origin`: pseudo-headers first (RFC 9113 §8.3), then
    /// the request's, then `content-length` when there is a body to declare (or the method is POST
    /// or PUT). A caller that wants no `content-length` (APNs) builds an ``HTTP2PreparedRequest``.
    func prepared(for origin: HTTP2Origin) -> HTTP2PreparedRequest {
        var prepared = HTTP2PreparedRequest(
            method: method, origin: origin, path: path, pathIndexing: pathIndexing,
            headerCapacity: headers.count + 1, body: body)
        prepared.block.add(contentsOf: headers)
        if body.readableBytes > 0 || method == "POST" || method == "PUT" {
            prepared.block.add(name: "content-length", value: String(body.readableBytes))
        }
        return prepared
    }
}

/// A request whose header block is written once, in the order it goes on the wire: the
/// pseudo-headers for its origin, then the caller's fields.
///
/// ``HTTP2Client/execute(_:to:timeout:)`` copies an ``HTTP2Request``'s headers behind the
/// pseudo-headers it adds; for a caller that sends many small requests (APNs) that copy is a
/// noticeable share of a request, and this type saves it. The client adds nothing to it (no
/// `content-length` either: HTTP/2 frames carry the length).
///
/// ```swift
/// var request = HTTP2PreparedRequest(origin: origin, path: "/3/device/" + token, pathIndexing: .nonIndexable)
/// request.addHeader(name: "apns-topic", value: topic)
/// request.body = ByteBuffer(bytes: payload)
/// let response = try await client.execute(request, timeout: .seconds(15))
/// ```
public struct HTTP2PreparedRequest: Sendable {
    /// Where it goes; fixed, because the pseudo-headers name it.
    public let origin: HTTP2Origin
    /// The whole header block, pseudo-headers first.
    public var headers: HPACKHeaders { block }
    public var body: ByteBuffer
    // Inlinable builders, so that a transport's calls compile into its own code rather than a call
    // per field across the module boundary (this is on APNs' path for every notification).
    @usableFromInline var block: HPACKHeaders

    /// - Parameters:
    ///   - method: `:method`.
    ///   - origin: where it goes; gives `:scheme` and `:authority`.
    ///   - path: `:path`, the request target.
    ///   - pathIndexing: `.nonIndexable` for a path that names one device (see
    ///     ``HTTP2Request/pathIndexing``).
    ///   - headerCapacity: how many regular fields will be added (room is reserved for them).
    ///   - body: sent in one piece after the headers.
    @inlinable
    public init(
        method: String = "POST", origin: HTTP2Origin, path: String, pathIndexing: HPACKIndexing = .indexable,
        headerCapacity: Int = 8, body: ByteBuffer = ByteBuffer()
    ) {
        self.origin = origin
        self.body = body
        block = HPACKHeaders()
        block.reserveCapacity(4 + headerCapacity)
        block.add(name: ":method", value: method)
        block.add(name: ":scheme", value: origin.scheme)
        block.add(name: ":authority", value: origin.authority)
        block.add(name: ":path", value: path, indexing: pathIndexing)
    }

    /// Adds a regular (lower-case, not pseudo-) header field, with its HPACK indexing hint.
    @inlinable
    public mutating func addHeader(name: String, value: String, indexing: HPACKIndexing = .indexable) {
        precondition(name.utf8.first != UInt8(ascii: ":"), "pseudo-headers are the initializer's")
        block.add(name: name, value: value, indexing: indexing)
    }
}

/// A complete response.
public struct HTTP2Response: Sendable {
    /// The `:status`.
    public var status: Int
    /// The response headers, pseudo-headers included.
    public var headers: HPACKHeaders
    /// The body, whole (bounded by ``HTTP2Client/Configuration/maximumResponseBodyBytes``).
    public var body: ByteBuffer
    /// The connection that answered, for ``HTTP2Client/retireConnection(of:)``.
    var connection: HTTP2ConnectionKey?

    public init(status: Int, headers: HPACKHeaders, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Names one connection of a client: its pool and its ID there (a reference, not the origin: a
/// response carries it, and copying an origin's strings into every response cost more).
struct HTTP2ConnectionKey: Sendable {
    let pool: HTTP2ConnectionPool
    let id: Int
}
