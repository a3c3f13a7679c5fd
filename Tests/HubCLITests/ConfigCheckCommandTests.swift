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

    @Test("a PostgreSQL URL with several hosts is explained; a read-only target is refused, never showing the password")
    func postgresHosts() async throws {
        let workspace = try makeWorkspace()
        let yaml = """
            store: { postgres: { url: env:HUB_DATABASE_URL } }
            apps:
              - id: notes.contoso.com
                name: Contoso Notes
                platforms: { ios: { appIds: [com.contoso.notes] } }
            """
        try yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let good = try await HubProcess.run(
            ["config", "check"], in: workspace,
            environment: ["HUB_DATABASE_URL": "postgres://hub:pw-secret-789@db1:5432,[::1]:5433/hub"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("host(s) db1:5432, [::1]:5433; tried in this order, the first that is read-write"))
        let bad = try await HubProcess.run(
            ["config", "check"], in: workspace,
            environment: ["HUB_DATABASE_URL": "postgres://hub:pw-secret-789@db1,db2/hub?target_session_attrs=standby"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("store.postgres.url: target_session_attrs=standby"), "\(bad.stderr)")
        for output in [good, bad] {
            #expect(!output.stdout.contains("pw-secret-789") && !output.stderr.contains("pw-secret-789"))
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

/// Issue 46, point 2: secrets too weak to guard anything, and one secret doing two jobs, are
/// refused by `hub config check` and by `hub serve` (which would otherwise serve with them, or
/// die on JWTKit's assertion for a short HS256 secret), each at its line and column.
@Suite("hub config check: weak and shared secrets")
struct WeakSecretTests {
    static let yaml = """
        server: { listen: "127.0.0.1:0", adminToken: env:ADMIN, cursorSecret: env:CURSOR }
        store: { sqlite: { path: data/hub.sqlite } }
        apps:
          - id: notes.contoso.com
            platforms: { ios: { appIds: [com.contoso.notes] } }
            identity:
              - { issuer: "https://login.contoso.com", audiences: [notes], secret: env:HS256 }
            publishers:
              - { name: backend, key: env:FIRST }
              - { name: ops, key: env:SECOND }
          - id: tasks.fabrikam.com
            platforms: { android: { appIds: [com.fabrikam.tasks] } }
            publishers:
              - { name: backend, key: env:THIRD }
        """

    static let strong = [
        "ADMIN": "admin-token-0123456789", "CURSOR": String(repeating: "c", count: 32),
        "HS256": String(repeating: "h", count: 32), "FIRST": "first-publisher-key-0123",
        "SECOND": "second-publisher-key-0123", "THIRD": "third-publisher-key-0123",
    ]

    static func errors(_ output: HubProcess.Output) -> [Substring] {
        output.stderr.split(separator: "\n").filter { $0.contains(": error: ") }
    }

    @Test("an admin token, cursor secret, HS256 secret or publisher key under its minimum: a located error each")
    func weakSecrets() async throws {
        let workspace = try makeWorkspace()
        try Self.yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        var environment = Self.strong
        environment["ADMIN"] = "x"
        environment["CURSOR"] = "abc"
        environment["HS256"] = String(repeating: "h", count: 31)
        environment["FIRST"] = "short-key"
        environment["SECOND"] = "a key with spaces in it"
        let expected = [
            ("hub.yaml:1:46:", "'server.adminToken' is shorter than 16 characters"),
            ("hub.yaml:1:71:", "'server.cursorSecret' is 3 bytes long; it must have at least 32"),
            ("hub.yaml:7:76:", "'apps[0].identity[0].secret' is 31 bytes long; it must have at least 32"),
            ("hub.yaml:9:31:", "'apps[0].publishers[0].key' is shorter than 16 characters"),
            ("hub.yaml:10:27:", "'apps[0].publishers[1].key' contains white space"),
        ]
        for command in [["config", "check"], ["serve", "--config", "hub.yaml"]] {
            let output = try await HubProcess.run(command, in: workspace, environment: environment)
            // Exit 1 with the diagnostics: not a crash (a signal) and not a hub that serves.
            #expect(output.status == 1, "\(command): \(output.status) \(output.stderr)")
            let errors = Self.errors(output)
            for (position, message) in expected {
                #expect(
                    errors.contains { $0.hasPrefix(position) && $0.contains(message) },
                    "\(command): missing \(position) \(message) in:\n\(output.stderr)")
            }
            #expect(errors.count == expected.count, "\(command): \(output.stderr)")
            for secret in ["short-key", "a key with spaces in it", String(repeating: "h", count: 31)] {
                #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret))
            }
        }
        // An admin token of spaces only is no token either.
        environment = Self.strong
        environment["ADMIN"] = String(repeating: " ", count: 20)
        let spaces = try await HubProcess.run(["config", "check"], in: workspace, environment: environment)
        #expect(spaces.status == 1)
        #expect(Self.errors(spaces).contains { $0.hasPrefix("hub.yaml:1:46:") }, "\(spaces.stderr)")
    }

    @Test("one publisher key on two apps, or equal to the admin token: refused where the second use is")
    func sharedSecrets() async throws {
        let workspace = try makeWorkspace()
        try Self.yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        var environment = Self.strong
        environment["SECOND"] = environment["ADMIN"]
        environment["THIRD"] = environment["FIRST"]
        let output = try await HubProcess.run(["config", "check"], in: workspace, environment: environment)
        #expect(output.status == 1)
        let errors = Self.errors(output)
        #expect(
            errors.contains {
                $0.hasPrefix("hub.yaml:10:27:")
                    && $0.contains("'apps[0].publishers[1].key' has the same value as 'server.adminToken' (line 1)")
            }, "\(output.stderr)")
        #expect(
            errors.contains {
                $0.hasPrefix("hub.yaml:14:31:")
                    && $0.contains(
                        "'apps[1].publishers[0].key' has the same value as 'apps[0].publishers[0].key' (line 9)")
            }, "\(output.stderr)")
        #expect(errors.count == 2, "\(output.stderr)")
        for secret in [Self.strong["ADMIN"]!, Self.strong["FIRST"]!] {
            #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret))
        }

        // The same file with a value of its own for each secret passes.
        let fine = try await HubProcess.run(["config", "check"], in: workspace, environment: Self.strong)
        #expect(fine.status == 0, "\(fine.stderr)")
    }
}
