import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// An `HTTPClient` owned by one provider client: no redirects (a redirect must never carry a bearer
/// token elsewhere), HTTP/2 when the server offers it by ALPN, extra trust roots for a test CA.
///
/// Call ``shutdown()`` when done; if the owner is released without it, the client is shut down
/// in the background rather than leaking its connections.
final class OwnedHTTPClient: Sendable {
    let client: HTTPClient

    /// - Throws: when a trust root is not a PEM certificate.
    init(trustRootsPEM: [String], http1Only: Bool = false) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !trustRootsPEM.isEmpty {
            let certificates = try trustRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10)), connectionPool: .init(idleTimeout: .seconds(120)))
        configuration.httpVersion = http1Only ? .http1Only : .automatic
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// Closes the connections; later requests fail.
    func shutdown() async throws {
        do {
            try await client.shutdown()
        } catch let error as HTTPClientError where error == .alreadyShutdown {}
    }

    deinit {
        client.shutdown { _ in }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// `application/x-www-form-urlencoded` bodies.
enum FormEncoding {
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
