public import NIOCore
public import NIOHPACK

import struct Foundation.URLComponents

/// Where requests go: scheme, host and port. Each origin gets its own connections.
///
/// `https` is HTTP/2 over TLS, negotiated by ALPN `h2`; `http` is cleartext HTTP/2 with prior
/// knowledge (`h2c`), for local test servers only.
public struct HTTP2Origin: Hashable, Sendable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    public var port: Int

    public init(scheme: String = "https", host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == "http" ? 80 : 443)
    }

    /// Whether connections use TLS.
    public var isSecure: Bool { scheme == "https" }

    /// The `:authority` of requests: the host (bracketed when IPv6) and a port that is not the default.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Whether ``host`` is an IP address literal (no SNI and no host-name check for those).
    var isIPAddress: Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0.isNumber || $0 == "." })
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

/// Names one connection of a client: its origin and its ID within the origin's pool.
struct HTTP2ConnectionKey: Hashable, Sendable {
    var origin: HTTP2Origin
    var id: Int
}
