import Synchronization

/// What the FCM, WNS and Web Push emulators each keep of their HTTPS server: the CA clients must
/// trust, and the server once ``start(port:http2:ownThread:maximumBodyBytes:route:)`` has bound it.
package final class EmulatorListener: Sendable {
    /// The CA whose certificate clients must trust.
    package let authority: TestCertificateAuthority
    private let server = Mutex<EmulatorHTTPServer?>(nil)

    /// Uses `authority`, or a new CA named `commonName` when it is `nil`.
    package init(authority: TestCertificateAuthority?, commonName: String) throws {
        self.authority = try authority ?? TestCertificateAuthority(commonName: commonName)
    }

    /// Issues a `localhost` certificate from ``authority`` and serves `route` on 127.0.0.1:`port`
    /// (0 picks a free one); see ``EmulatorHTTPServer/start(certificate:port:http2:ownThread:maximumBodyBytes:route:)``.
    package func start(
        port: Int, http2: Bool, ownThread: Bool = false, maximumBodyBytes: Int = 1 << 20,
        route: @escaping @Sendable (EmulatorRequest) -> EmulatorReply
    ) async throws {
        let certificate = try authority.issue(dnsNames: ["localhost"])
        let started = try await EmulatorHTTPServer.start(
            certificate: certificate, port: port, http2: http2, ownThread: ownThread,
            maximumBodyBytes: maximumBodyBytes, route: route)
        server.withLock { $0 = started }
    }

    /// Stops listening and closes open connections.
    package func shutdown() async throws {
        try await server.withLock { $0 }?.shutdown()
    }

    /// The port listened on; 0 before ``start(port:http2:ownThread:maximumBodyBytes:route:)``.
    package var port: Int { server.withLock { $0?.port ?? 0 } }
}
