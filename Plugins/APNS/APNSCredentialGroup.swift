import HubCore
import HubHTTP2
import Logging
import Synchronization

/// Everything the transport keeps for one set of APNs credentials: the provider token (token
/// auth), one HTTP/2 client (its TLS context carries the client certificate for certificate auth)
/// with connections to each environment's server, and each environment's `BadDeviceToken` streak.
/// Connections of different credentials never mix: APNs binds a connection to the team of its
/// first request.
final class APNSCredentialGroup: Sendable {
    /// Names the credentials in logs: team and key ID, or where the certificate came from.
    let label: String
    let tokens: APNSTokenProvider?
    let client: HTTP2Client
    private let streaks: [APNSEnvironment: APNSBadDeviceTokenStreak]

    /// - Throws: ``APNSError/Code/invalidCredentials`` when the key, the certificate or the trust
    ///   roots cannot be used.
    init(credentials: APNSCredentials, configuration: APNSTransport.Configuration, logger: Logger) throws(APNSError) {
        var identity: HTTP2ClientIdentity?
        switch credentials.authentication {
        case .token(let keyID, let teamID, let privateKey):
            label = "team \(teamID), key \(keyID)"
            tokens = try APNSTokenProvider(
                keyID: keyID, teamID: teamID, privateKeyPEM: privateKey.reveal(),
                refreshInterval: configuration.tokenRefreshInterval, now: configuration.now)
        case .certificate(let p12, let password):
            label = "certificate \(p12.source)"
            tokens = nil
            do {
                identity = try HTTP2ClientIdentity(
                    pkcs12: p12.revealBytes(), passphrase: password.map { Array($0.reveal().utf8) } ?? [])
            } catch {
                throw APNSError(
                    .invalidCredentials,
                    "the APNs certificate (\(p12.source)) does not open: export the certificate and its key as .p12 "
                        + "again and check credentials.apns.password",
                    underlying: error)
            }
        }
        do {
            client = try HTTP2Client(
                configuration: configuration.http2(identity: identity),
                logger: logger.with(metadata: ["credentials": "\(label)"]))
        } catch {
            throw APNSError(
                .invalidCredentials, "the TLS settings for APNs are not usable: \(error.message)", underlying: error)
        }
        streaks = [.production: APNSBadDeviceTokenStreak(), .development: APNSBadDeviceTokenStreak()]
    }

    /// The `BadDeviceToken` streak of the server `environment` goes to.
    func streak(for environment: APNSEnvironment) -> APNSBadDeviceTokenStreak {
        streaks[environment == .development ? .development : .production]!
    }
}

extension Logger {
    /// This logger with `metadata` added.
    fileprivate func with(metadata: Logger.Metadata) -> Logger {
        var logger = self
        for (key, value) in metadata { logger[metadataKey: key] = value }
        return logger
    }
}

extension APNSTransport.Configuration {
    /// The HTTP/2 client's settings: trust roots, limits and timeouts from here; Apple's HPACK
    /// guidance (PROVIDERS.md §1.2); no header validation by NIO, since ``APNSRequest/headerProblem``
    /// checks what an embedder can pass in before sending.
    func http2(identity: HTTP2ClientIdentity?) -> HTTP2Client.Configuration {
        HTTP2Client.Configuration(
            trustRoots: trustRoots, clientIdentity: identity, maximumConnectionsPerOrigin: maxConnections,
            maximumStreamsPerConnection: maxStreamsPerConnection, connectTimeout: connectTimeout,
            pingInterval: pingInterval, pingTimeout: pingTimeout,
            // APNs answers with at most a small JSON object.
            maximumResponseBodyBytes: 16_384, refusedStreamRetries: 2,
            headersIndexedOnce: ["apns-id", "apns-expiration", "apns-collapse-id"], validatesHeaders: false)
    }
}
