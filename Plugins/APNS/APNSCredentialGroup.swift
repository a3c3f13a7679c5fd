import HubCore
import Logging
import NIOSSL
import Synchronization

/// Everything the transport keeps for one set of APNs credentials: the provider token (token
/// auth), the TLS context (with the client certificate for certificate auth) and one connection
/// pool per environment. Connections of different credentials never mix: APNs binds a connection
/// to the team of its first request.
final class APNSCredentialGroup: Sendable {
    /// Names the credentials in logs: team and key ID, or where the certificate came from.
    let label: String
    let tokens: APNSTokenProvider?
    private let tls: NIOSSLContext
    private let configuration: APNSTransport.Configuration
    private let logger: Logger
    private let pools = Mutex<[APNSEnvironment: APNSConnectionPool]>([:])

    /// - Throws: ``APNSError/Code/invalidCredentials`` when the key or certificate cannot be used.
    init(credentials: APNSCredentials, configuration: APNSTransport.Configuration, logger: Logger) throws(APNSError) {
        switch credentials.authentication {
        case .token(let keyID, let teamID, let privateKey):
            label = "team \(teamID), key \(keyID)"
            tokens = try APNSTokenProvider(
                keyID: keyID, teamID: teamID, privateKeyPEM: privateKey.reveal(),
                refreshInterval: configuration.tokenRefreshInterval, now: configuration.now)
        case .certificate(let p12, _):
            label = "certificate \(p12.source)"
            tokens = nil
        }
        tls = try APNSTLS.makeContext(credentials: credentials, trustRoots: configuration.trustRoots)
        self.configuration = configuration
        self.logger = logger
    }

    /// The pool for `environment`, made on first use.
    func pool(for environment: APNSEnvironment) -> APNSConnectionPool {
        pools.withLock { pools in
            if let pool = pools[environment] { return pool }
            let server = configuration.server(for: environment)
            let pool = APNSConnectionPool(
                server: server, label: "\(environment) \(server) (\(label))", tls: tls, configuration: configuration,
                logger: logger)
            pools[environment] = pool
            return pool
        }
    }

    /// Every pool made so far.
    var allPools: [APNSConnectionPool] { pools.withLock { Array($0.values) } }
}
