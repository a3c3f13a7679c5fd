import Foundation
import HubEmulators
import Testing

@Suite("hub map-app verify-domain")
struct VerifyDomainCommandTests {
    /// Maps an app named `localhost` (so the domain resolves to this machine) and returns its token.
    func mapLocalhostApp(in workspace: URL) async throws -> String {
        let output = try await HubProcess.run(
            ["map-app", "--app", "localhost", "--web", "https://localhost"], in: workspace)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains(".well-known/notification-hub.json"))
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        let token = try #require(yaml.split(separator: "\n").first { $0.contains("hub-verify=") })
        return String(token[token.range(of: "hub-verify=")!.lowerBound...]).trimmingCharacters(in: .whitespaces)
    }

    @Test("the served token is found over TLS with a test CA, and the verified time is recorded")
    func verifies() async throws {
        let workspace = try makeWorkspace()
        let token = try await mapLocalhostApp(in: workspace)
        let authority = try TestCertificateAuthority()
        let leaf = try authority.issue(dnsNames: ["localhost"])
        let caFile = workspace.appendingPathComponent("ca.pem").path
        try authority.writeCertificatePEM(to: caFile)
        let server = try await LocalHTTPSServer.start(tls: try leaf.serverTLSConfiguration())
        server.setResponse(.json("{\"verification\": [\"\(token)\"]}"), forPath: "/.well-known/notification-hub.json")
        let ok = try await HubProcess.run(
            ["map-app", "verify-domain", "--app", "localhost", "--port", "\(server.port)", "--ca-file", caFile],
            in: workspace)
        let wrongToken = "{\"verification\": \"hub-verify=0000\"}"
        server.setResponse(.json(wrongToken), forPath: "/.well-known/notification-hub.json")
        let wrong = try await HubProcess.run(
            ["map-app", "verify-domain", "--app", "localhost", "--port", "\(server.port)", "--ca-file", caFile],
            in: workspace)
        let untrusted = try await HubProcess.run(
            ["map-app", "verify-domain", "--app", "localhost", "--port", "\(server.port)"], in: workspace)
        try await server.shutdown()

        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("localhost: verified"))
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        #expect(yaml.contains("verifiedAt:"))
        #expect(try await HubProcess.run(["config", "check"], in: workspace).stdout.contains("domain: verified"))
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains(token) || wrong.stderr.contains("hub-verify"))
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("--ca-file"))
    }

    @Test("an unreachable host is a clear error and changes nothing")
    func unreachable() async throws {
        let workspace = try makeWorkspace()
        _ = try await mapLocalhostApp(in: workspace)
        let before = try read(workspace.appendingPathComponent("hub.yaml"))
        let server = try await LocalHTTPSServer.start(
            tls: try TestCertificateAuthority().issue(dnsNames: ["localhost"]).serverTLSConfiguration())
        let port = server.port
        try await server.shutdown()
        let output = try await HubProcess.run(
            ["map-app", "verify-domain", "--app", "localhost", "--port", "\(port)"], in: workspace)
        #expect(output.status == 1)
        #expect(output.stderr.lowercased().contains("reach") || output.stderr.lowercased().contains("connect"))
        #expect(try read(workspace.appendingPathComponent("hub.yaml")) == before)
    }

    @Test("an app without a token is told how to get one")
    func noToken() async throws {
        let workspace = try makeWorkspace()
        try "apps:\n  - id: localhost\n    platforms: { web: { appIds: [\"https://localhost\"] } }\n".write(
            to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(["map-app", "verify-domain", "--app", "localhost"], in: workspace)
        #expect(output.status == 1)
        #expect(output.stderr.contains("--domain-token"))
        let generate = try await HubProcess.run(["map-app", "--app", "localhost", "--domain-token"], in: workspace)
        #expect(generate.status == 0, "\(generate.stderr)")
        #expect(try read(workspace.appendingPathComponent("hub.yaml")).contains("hub-verify="))
    }
}
