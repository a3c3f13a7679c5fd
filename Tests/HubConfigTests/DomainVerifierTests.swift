import Foundation
import HubEmulators
import Testing

@testable import HubConfig

@Suite("Domain verifier")
struct DomainVerifierTests {
    static let path = "/.well-known/notification-hub.json"
    let token = "hub-verify=0f1e2d3c4b5a6978"

    /// A running HTTPS server for `localhost` with a certificate from a fresh test CA.
    struct Fixture {
        let server: LocalHTTPSServer
        /// A temporary PEM file holding the CA certificate that signed the server's certificate.
        let caFile: String

        func verifier(trustingCA: Bool = true) -> DomainVerifier {
            DomainVerifier(caFile: trustingCA ? caFile : nil, port: server.port, timeout: .seconds(5))
        }
    }

    /// Runs `body` against a fresh server; the server is shut down and the CA file removed even if
    /// `body` throws.
    func withServer<Result>(
        dnsNames: [String] = ["localhost"],
        ipAddresses: [String] = ["127.0.0.1"],
        _ body: (Fixture) async throws -> Result
    ) async throws -> Result {
        let authority = try TestCertificateAuthority()
        let certificate = try authority.issue(dnsNames: dnsNames, ipAddresses: ipAddresses)
        let caFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("hub-test-ca-\(UUID().uuidString).pem").path
        try authority.writeCertificatePEM(to: caFile)
        let server = try await LocalHTTPSServer.start(tls: certificate.serverTLSConfiguration())

        let result: Result
        do {
            result = try await body(Fixture(server: server, caFile: caFile))
        } catch {
            try? await server.shutdown()
            try? FileManager.default.removeItem(atPath: caFile)
            throw error
        }
        try await server.shutdown()
        try? FileManager.default.removeItem(atPath: caFile)
        return result
    }

    // MARK: - Success

    @Test("Accepts a document listing the token in an array")
    func arrayForm() async throws {
        try await withServer { fixture in
            let document = DomainVerifier.documentBody(tokens: ["hub-verify=aaaa", token])
            fixture.server.setResponse(.json(document), forPath: Self.path)

            let url = try await fixture.verifier().verify(domain: "localhost", token: token)

            #expect(url.absoluteString == "https://localhost:\(fixture.server.port)\(Self.path)")
            #expect(fixture.server.requestedPaths() == [Self.path])
        }
    }

    @Test("Accepts a document whose verification member is a single string")
    func stringForm() async throws {
        try await withServer { fixture in
            fixture.server.setResponse(.json(#"{"verification": " \#(token) "}"#), forPath: Self.path)

            let url = try await fixture.verifier().verify(domain: "LOCALHOST.", token: token)

            #expect(url.host == "localhost")
        }
    }

    @Test("Verifies an IP address against the certificate's IP subject alternative name")
    func ipAddress() async throws {
        try await withServer(dnsNames: []) { fixture in
            fixture.server.setResponse(.json(DomainVerifier.documentBody(tokens: [token])), forPath: Self.path)

            let url = try await fixture.verifier().verify(domain: "127.0.0.1", token: token)

            #expect(url.host == "127.0.0.1")
        }
    }

    // MARK: - Document problems

    @Test("A document without the token is tokenMissing and names the token to add")
    func wrongToken() async throws {
        try await withServer { fixture in
            fixture.server.setResponse(
                .json(DomainVerifier.documentBody(tokens: ["hub-verify=ffff"])),
                forPath: Self.path
            )

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .tokenMissing)
            #expect(error?.message.contains(token) == true)
            #expect(error?.message.contains("hub-verify=ffff") == true)
        }
    }

    @Test("Malformed JSON is badDocument and names the expected shape")
    func malformedJSON() async throws {
        try await withServer { fixture in
            fixture.server.setResponse(.json(#"{"verification": ["#), forPath: Self.path)

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .badDocument)
            #expect(error?.message.contains(#"{"verification": ["\#(token)"]}"#) == true)
        }
    }

    @Test(
        "JSON of the wrong shape is badDocument",
        arguments: [#"["hub-verify=1"]"#, #"{}"#, #"{"verification": 42}"#, #"{"verification": [1]}"#]
    )
    func wrongShape(json: String) async throws {
        try await withServer { fixture in
            fixture.server.setResponse(.json(json), forPath: Self.path)

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .badDocument)
        }
    }

    @Test("A body over 64 KiB is badDocument")
    func oversizedBody() async throws {
        try await withServer { fixture in
            let body = [UInt8](repeating: UInt8(ascii: " "), count: DomainVerifier.maximumDocumentSize + 1)
            fixture.server.setResponse(.init(body: body), forPath: Self.path)

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .badDocument)
        }
    }

    // MARK: - HTTP and transport problems

    @Test("A 404 is httpStatus")
    func notFound() async throws {
        try await withServer { fixture in
            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .httpStatus)
            #expect(error?.message.contains("404") == true)
            #expect(fixture.server.requestedPaths() == [Self.path])
        }
    }

    @Test("A redirect is not followed")
    func redirect() async throws {
        try await withServer { fixture in
            let target = "https://localhost:\(fixture.server.port)/elsewhere.json"
            fixture.server.setResponse(.init(status: 301, headers: [("location", target)]), forPath: Self.path)
            fixture.server.setResponse(.json(DomainVerifier.documentBody(tokens: [token])), forPath: "/elsewhere.json")

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .httpStatus)
            #expect(error?.message.contains("redirects are not followed") == true)
            #expect(fixture.server.requestedPaths() == [Self.path])
        }
    }

    @Test("A certificate from an untrusted CA is tlsFailure and mentions --ca-file")
    func untrustedCertificate() async throws {
        try await withServer { fixture in
            fixture.server.setResponse(.json(DomainVerifier.documentBody(tokens: [token])), forPath: Self.path)

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier(trustingCA: false).verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .tlsFailure)
            #expect(error?.message.contains("--ca-file") == true)
            #expect(fixture.server.requestedPaths().isEmpty)
        }
    }

    @Test("A trusted certificate for another host name is tlsFailure")
    func wrongHostName() async throws {
        try await withServer(dnsNames: ["other.example"], ipAddresses: []) { fixture in
            fixture.server.setResponse(.json(DomainVerifier.documentBody(tokens: [token])), forPath: Self.path)

            let error = await #expect(throws: DomainVerificationError.self) {
                try await fixture.verifier().verify(domain: "localhost", token: token)
            }

            #expect(error?.code == .tlsFailure)
            #expect(error?.message.contains("valid for localhost") == true)
        }
    }

    @Test("A closed port is unreachable")
    func closedPort() async throws {
        let port = try await withServer { fixture in fixture.server.port }

        let error = await #expect(throws: DomainVerificationError.self) {
            try await DomainVerifier(port: port, timeout: .seconds(5)).verify(domain: "localhost", token: token)
        }

        #expect(error?.code == .unreachable)
    }

    @Test("A domain with a scheme, path or port is rejected before any request")
    func invalidDomain() async throws {
        for domain in ["https://notes.contoso.com", "notes.contoso.com/x", "notes.contoso.com:8443", "", "a..b"] {
            let error = await #expect(throws: DomainVerificationError.self) {
                try await DomainVerifier().verify(domain: domain, token: token)
            }
            #expect(error?.code == .invalidInput, "\(domain)")
        }
    }

    // MARK: - Helpers for operators

    @Test("The well-known URL leaves out port 443")
    func wellKnownURL() {
        #expect(
            DomainVerifier.wellKnownURL(domain: "notes.contoso.com", port: 443).absoluteString
                == "https://notes.contoso.com/.well-known/notification-hub.json"
        )
        #expect(
            DomainVerifier.wellKnownURL(domain: "localhost", port: 8443).absoluteString
                == "https://localhost:8443/.well-known/notification-hub.json"
        )
    }

    @Test("The document body is pretty JSON that the verifier accepts")
    func documentBody() throws {
        let body = DomainVerifier.documentBody(tokens: [token, "hub-verify=\"odd\""])
        #expect(
            body == """
                {
                  "verification": [
                    "hub-verify=0f1e2d3c4b5a6978",
                    "hub-verify=\\"odd\\""
                  ]
                }

                """
        )
        let url = DomainVerifier.wellKnownURL(domain: "localhost", port: 443)
        let entries = try DomainVerifier.parseDocument(Array(body.utf8), url: url, token: token)
        #expect(entries == [token, "hub-verify=\"odd\""])
    }
}
