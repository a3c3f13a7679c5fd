import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

@testable import HubWebPush

/// Posts hand-made requests to the emulator, to see what it refuses.
enum RawPost {
    static func send(
        to url: String, trust: String, authorization: String, body: [UInt8], ttl: String? = "60"
    ) async throws -> Int {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(trust.utf8)))]
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
        defer { _ = client.shutdown() }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: authorization)
        if let ttl { request.headers.add(name: "TTL", value: ttl) }
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 16)
        return Int(response.status.code)
    }
}

extension VAPIDCredentials {
    /// Credentials with any subject, to see the push service refuse a bad one.
    init(unchecked key: VAPIDKey, subject: String) {
        self = try! VAPIDCredentials(key: key, subject: "mailto:x@example.com")
        self.subject = subject
    }
}
