import Foundation
import Testing

@Suite("hub config check")
struct ConfigCheckCommandTests {
    @Test("five mistakes print five diagnostics with line:column and exit 1")
    func fiveMistakes() async throws {
        let workspace = try makeWorkspace()
        let output = try await HubProcess.run(["config", "check", "--config", "five-mistakes.yaml"], in: workspace)
        #expect(output.status == 1)
        let diagnostics = output.stderr.split(separator: "\n").filter { $0.contains(": error: ") }
        #expect(diagnostics.count == 5, "\(output.stderr)")
        for position in [
            "five-mistakes.yaml:3:3:", "five-mistakes.yaml:8:42:", "five-mistakes.yaml:11:7:",
            "five-mistakes.yaml:13:9:", "five-mistakes.yaml:16:27:",
        ] {
            #expect(diagnostics.contains { $0.hasPrefix(position) }, "missing \(position) in \(output.stderr)")
        }
    }

    @Test("a valid file prints a summary with secrets masked and exits 0")
    func summary() async throws {
        let workspace = try makeWorkspace()
        let yaml = """
            server: { adminToken: env:ADMIN }
            apps:
              - id: notes.contoso.com
                name: Contoso Notes
                platforms: { ios: { appIds: [com.contoso.notes, com.contoso.notes.beta] } }
                credentials:
                  apns: { teamId: ABCDE12345, keyId: TEST123456, privateKey: file:AuthKey_TEST123456.p8 }
                publishers: [ { name: backend, key: env:PUBLISHER } ]
            """
        try yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(
            ["config", "check"], in: workspace,
            environment: ["ADMIN": "admin-secret-value-123", "PUBLISHER": "publisher-secret-value-456"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("notes.contoso.com (Contoso Notes)"))
        #expect(output.stdout.contains("ios: 2 app ID(s)"))
        #expect(output.stdout.contains("apns: token (.p8)"))
        #expect(output.stdout.contains("key from env:PUBLISHER"))
        for secret in ["admin-secret-value-123", "publisher-secret-value-456", "PRIVATE KEY"] {
            #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret))
        }
    }

    @Test("every problem of a file at once: an unset env: secret shows next to its entry's other errors")
    func everyProblemAtOnce() async throws {
        let workspace = try makeWorkspace()
        let yaml = """
            apps:
              - id: notes.contoso.com
                platforms: { ios: { appIds: [com.contoso.notes] }, windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] } }
                identity:
                  - { issuer: "https://a.example", audiences: [a], secret: env:UNSET_IDENTITY, jwks: "https://a.example/jwks" }
                  - { issuer: [b], audiences: [], secret: env:UNSET_SECOND }
                credentials:
                  apns: { privateKey: file:missing.p8, certificate: file:missing.p12, password: env:UNSET_P12 }
                  wns: { packageSid: [not-a-sid], clientSecret: env:UNSET_WNS }
                publishers: [ { name: [backend], key: env:UNSET_PUBLISHER } ]
            """
        try yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let output = try await HubProcess.run(["config", "check"], in: workspace, environment: [:])
        #expect(output.status == 1)
        let diagnostics = output.stderr.split(separator: "\n").filter { $0.contains(": error: ") }
        let expected = [
            "takes jwks (RS256/ES256) or secret (HS256), not both", "UNSET_IDENTITY",
            "'apps[0].identity[1].issuer' must be a single value", "'apps[0].identity[1].audiences' is empty",
            "UNSET_SECOND", "takes a .p8 token key (privateKey) or a .p12 certificate, not both", "missing.p8",
            "missing.p12", "UNSET_P12", "'apps[0].credentials.wns.packageSid' must be a single value", "UNSET_WNS",
            "'apps[0].publishers[0].name' must be a single value", "UNSET_PUBLISHER",
        ]
        for text in expected {
            #expect(diagnostics.contains { $0.contains(text) }, "missing '\(text)' in:\n\(output.stderr)")
        }
        #expect(diagnostics.count == expected.count, "\(output.stderr)")
    }

    @Test("a missing file says how to fix it")
    func missingFile() async throws {
        let output = try await HubProcess.run(["config", "check", "--config", "nope.yaml"], in: try makeWorkspace())
        #expect(output.status == 1)
        #expect(output.stderr.contains("nope.yaml: error: no such file"))
    }
}
