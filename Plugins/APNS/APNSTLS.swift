import HubCore
import NIOSSL

/// Builds the TLS client context of one connection pool: TLS 1.2+, ALPN `h2`, the configured trust
/// roots, and for certificate credentials the `.p12`'s certificate chain and key.
enum APNSTLS {
    /// - Throws: ``APNSError/Code/invalidCredentials`` when the `.p12` does not open with its
    ///   password, or the trust roots cannot be read.
    static func makeContext(
        credentials: APNSCredentials, trustRoots: APNSTransport.TrustRoots
    ) throws(APNSError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        // A dead peer never answers close_notify; do not keep a closing connection for long.
        tls.shutdownTimeout = .seconds(1)
        do {
            switch trustRoots.source {
            case .system:
                tls.trustRoots = .default
            case .pem(let text):
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(text.utf8)))
            case .pemFile(let path):
                tls.trustRoots = .file(path)
                _ = try NIOSSLCertificate.fromPEMFile(path)
            }
        } catch {
            throw APNSError(
                .invalidCredentials, "the APNs trust roots cannot be read: give PEM certificates", underlying: error)
        }
        if case .certificate(let p12, let password) = credentials.authentication {
            let identity = try identity(p12: p12, password: password)
            tls.certificateChain = identity.chain.map { .certificate($0) }
            tls.privateKey = .privateKey(identity.key)
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw APNSError(.invalidCredentials, "the TLS settings for APNs are not usable", underlying: error)
        }
    }

    /// Opens a `.p12` bundle: its certificate chain (leaf first) and private key.
    static func identity(
        p12: Secret, password: Secret?
    ) throws(APNSError) -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        do {
            let bundle = try NIOSSLPKCS12Bundle(
                buffer: p12.revealBytes(), passphrase: password.map { Array($0.reveal().utf8) } ?? [])
            guard !bundle.certificateChain.isEmpty else {
                throw APNSError(.invalidCredentials, "the .p12 (\(p12.source)) holds no certificate")
            }
            return (bundle.certificateChain, bundle.privateKey)
        } catch let error as APNSError {
            throw error
        } catch {
            throw APNSError(
                .invalidCredentials,
                "the APNs certificate (\(p12.source)) does not open: export the certificate and its key as .p12 "
                    + "again and check credentials.apns.password",
                underlying: error)
        }
    }
}
