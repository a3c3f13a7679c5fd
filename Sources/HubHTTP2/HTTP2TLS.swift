import NIOSSL

/// The certificate authorities a server certificate must chain to.
public struct HTTP2TrustRoots: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        case system
        case pem(String)
        case pemFile(String)
    }
    let source: Source

    /// The operating system's store (what public push services need).
    public static let system = HTTP2TrustRoots(source: .system)
    /// Only the certificates in this PEM text, such as an emulator's test CA.
    public static func pem(_ text: String) -> HTTP2TrustRoots { HTTP2TrustRoots(source: .pem(text)) }
    /// Only the certificates in the PEM file at `path`.
    public static func pemFile(_ path: String) -> HTTP2TrustRoots { HTTP2TrustRoots(source: .pemFile(path)) }
}

/// A TLS client certificate and its private key, presented to servers that authenticate clients
/// by certificate (APNs certificate authentication).
public struct HTTP2ClientIdentity: Sendable {
    /// The certificate chain, leaf first.
    let chain: [NIOSSLCertificate]
    let key: NIOSSLPrivateKey

    /// Opens a PKCS #12 (`.p12`) bundle.
    /// - Throws: ``HTTP2ClientError/Code/invalidConfiguration`` when it does not open with
    ///   `passphrase` or holds no certificate; the message never contains the passphrase.
    public init(pkcs12 bytes: [UInt8], passphrase: [UInt8]) throws(HTTP2ClientError) {
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: passphrase)
        } catch {
            throw HTTP2ClientError(.invalidConfiguration, "the PKCS #12 bundle does not open", underlying: error)
        }
        guard !bundle.certificateChain.isEmpty else {
            throw HTTP2ClientError(.invalidConfiguration, "the PKCS #12 bundle holds no certificate")
        }
        chain = bundle.certificateChain
        key = bundle.privateKey
    }
}

extension HTTP2Client.Configuration {
    /// The TLS client context: TLS 1.2+, ALPN `h2`, the trust roots, the client identity.
    /// - Throws: ``HTTP2ClientError/Code/invalidConfiguration`` when a trust root is not a PEM
    ///   certificate or the identity does not fit the context.
    func makeTLSContext() throws(HTTP2ClientError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        // A dead peer never sends close_notify; do not hold a closing connection for long.
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
            if !trustRootsPEM.isEmpty {
                let roots = try trustRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
                tls.additionalTrustRoots = [.certificates(roots)]
            }
        } catch {
            throw HTTP2ClientError(
                .invalidConfiguration, "the TLS trust roots cannot be read: give PEM certificates", underlying: error)
        }
        if let identity = clientIdentity {
            tls.certificateChain = identity.chain.map { .certificate($0) }
            tls.privateKey = .privateKey(identity.key)
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw HTTP2ClientError(.invalidConfiguration, "the TLS settings are not usable", underlying: error)
        }
    }
}
