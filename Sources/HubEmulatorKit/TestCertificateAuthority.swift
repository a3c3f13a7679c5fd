import Crypto
import NIOCore
public import NIOSSL
import X509

import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.URL

/// A throwaway certificate authority for tests that need real TLS on 127.0.0.1.
///
/// Creating a value generates a fresh P-256 key pair and a self-signed CA certificate that is valid
/// from one hour ago until one day from now. Nothing is persisted and nothing is added to any system
/// trust store: a client trusts the CA only when it is told to, for example by writing
/// ``certificatePEM`` to a file with ``writeCertificatePEM(to:)`` and handing that file to the
/// client as its only trust root.
///
/// Use ``issue(dnsNames:ipAddresses:)`` to mint server certificates (for `localhost`, for an
/// emulated provider host name, ...) and ``TestCertificate/serverTLSConfiguration(alpn:)`` to turn one
/// into a NIOSSL server configuration. One authority can issue any number of certificates, so a
/// test can share it between several local servers.
public struct TestCertificateAuthority: Sendable {
    /// The CA certificate in PEM form (`-----BEGIN CERTIFICATE-----`), suitable as a trust root.
    public let certificatePEM: String

    /// The distinguished name used as issuer of every certificate this authority issues.
    private let name: DistinguishedName
    private let privateKey: P256.Signing.PrivateKey
    private let keyIdentifier: [UInt8]

    /// Generates a new key pair and self-signed CA certificate.
    ///
    /// - Parameter commonName: The CA's subject common name, which shows up in TLS error messages.
    /// - Throws: if the certificate cannot be built or serialised (not expected in practice).
    public init(commonName: String = "NotificationHub Test CA") throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("NotificationHub tests")
            CommonName(commonName)
        }
        let keyIdentifier = Self.keyIdentifier(for: key.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(keyIdentifier: keyIdentifier[...])
        }
        self.certificatePEM = try Self.certificatePEM(
            of: key.publicKey, subject: name, extensions: extensions, issuer: name, issuerKey: key)
        self.name = name
        self.privateKey = key
        self.keyIdentifier = keyIdentifier
    }

    /// Writes ``certificatePEM`` to `path`, replacing any existing file.
    ///
    /// - Throws: the underlying file-system error if the file cannot be written.
    public func writeCertificatePEM(to path: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Issues a server (leaf) certificate signed by this authority.
    ///
    /// The certificate has a new P-256 key, the same validity window as the CA, a subject alternative
    /// name entry for every DNS name and IP address given, `extendedKeyUsage = serverAuth` and
    /// `keyUsage = digitalSignature`. Its common name is the first DNS name (or the first IP address).
    ///
    /// - Parameters:
    ///   - dnsNames: Host names the certificate is valid for, such as `localhost`.
    ///   - ipAddresses: IPv4 or IPv6 addresses in text form the certificate is valid for.
    /// - Throws: ``TestCertificateError`` if no name is given or an address does not parse.
    public func issue(dnsNames: [String], ipAddresses: [String] = ["127.0.0.1"]) throws -> TestCertificate {
        guard let commonName = dnsNames.first ?? ipAddresses.first else {
            throw TestCertificateError("a certificate needs at least one DNS name or IP address")
        }
        var alternativeNames = dnsNames.map { GeneralName.dnsName($0) }
        for address in ipAddresses {
            guard let bytes = Self.packedAddress(address) else {
                throw TestCertificateError("'\(address)' is not an IPv4 or IPv6 address")
            }
            alternativeNames.append(.ipAddress(.init(contentBytes: bytes[...])))
        }

        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("NotificationHub tests")
            CommonName(commonName)
        }
        let authorityKeyIdentifier = keyIdentifier
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(alternativeNames)
            SubjectKeyIdentifier(keyIdentifier: Self.keyIdentifier(for: key.publicKey)[...])
            AuthorityKeyIdentifier(keyIdentifier: authorityKeyIdentifier[...])
        }
        return TestCertificate(
            certificatePEM: try Self.certificatePEM(
                of: key.publicKey, subject: subject, extensions: extensions, issuer: name, issuerKey: privateKey),
            privateKeyPEM: key.pemRepresentation
        )
    }

    /// A v3 certificate of `key` signed by `issuerKey` (ECDSA with SHA-256), valid from one hour ago
    /// until one day from now, in PEM form.
    private static func certificatePEM(
        of key: P256.Signing.PublicKey, subject: DistinguishedName, extensions: Certificate.Extensions,
        issuer: DistinguishedName, issuerKey: P256.Signing.PrivateKey
    ) throws -> String {
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: issuer,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(issuerKey)
        )
        return try certificate.serializeAsPEM().pemString
    }

    /// The conventional key identifier: SHA-1 over the public key bytes.
    private static func keyIdentifier(for key: P256.Signing.PublicKey) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: key.x963Representation))
    }

    /// The network-order bytes of an IPv4 (4 bytes) or IPv6 (16 bytes) address, or `nil`.
    private static func packedAddress(_ text: String) -> [UInt8]? {
        guard let address = try? SocketAddress(ipAddress: text, port: 0) else { return nil }
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }
}

/// A leaf certificate and its private key, both PEM-encoded, as issued by ``TestCertificateAuthority``.
///
/// The private key is a throwaway test key; it is not a secret worth protecting.
public struct TestCertificate: Sendable {
    /// The certificate (`-----BEGIN CERTIFICATE-----`).
    public let certificatePEM: String
    /// The PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`).
    public let privateKeyPEM: String

    /// A NIOSSL server configuration that presents this certificate.
    ///
    /// - Parameter alpn: The application protocols to offer, in order of preference
    ///   (`["h2", "http/1.1"]` for an HTTP/2 server).
    /// - Throws: a NIOSSL error if the PEM text cannot be loaded.
    public func serverTLSConfiguration(alpn: [String] = ["http/1.1"]) throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem)
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)],
            privateKey: .privateKey(key)
        )
        configuration.applicationProtocols = alpn
        return configuration
    }
}

/// A problem building a test certificate, such as an unparsable IP address.
public struct TestCertificateError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    package init(_ description: String) {
        self.description = description
    }
}
