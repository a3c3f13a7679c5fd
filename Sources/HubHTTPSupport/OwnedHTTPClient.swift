public import AsyncHTTPClient
import NIOCore
import NIOSSL

/// An `HTTPClient` owned by one provider client: no redirects (a redirect must never carry a bearer
/// token elsewhere), HTTP/2 when the server offers it by ALPN, extra trust roots for a test CA.
///
/// Call ``shutdown()`` when done; if the owner is released without it, the client is shut down
/// in the background rather than leaking its connections.
///
/// ```swift
/// let http = try OwnedHTTPClient(trustRootsPEM: configuration.trustRootsPEM)
/// let response = try await http.client.execute(request, timeout: TimeAmount(configuration.requestTimeout))
/// try await http.shutdown()
/// ```
public final class OwnedHTTPClient: Sendable {
    /// The client to send with.
    public let client: HTTPClient

    /// - Parameters:
    ///   - trustRootsPEM: PEM certificates trusted besides the system's (a test CA).
    ///   - http1Only: never negotiate HTTP/2 (WNS speaks HTTP/1.1).
    /// - Throws: when a trust root is not a PEM certificate.
    public init(trustRootsPEM: [String], http1Only: Bool = false) throws {
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

    /// Closes the connections; later requests fail. Calling it twice is harmless.
    public func shutdown() async throws {
        do {
            try await client.shutdown()
        } catch let error as HTTPClientError where error == .alreadyShutdown {}
    }

    deinit {
        client.shutdown { _ in }
    }
}
