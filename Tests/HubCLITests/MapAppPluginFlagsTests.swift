import Foundation
import HubCLI
import HubCore
import Testing

/// A transport of the test's own: `hub map-app` knows its flags only from its onboarding.
private struct PagerPlugin: TransportPlugin {
    var id: TransportID { TransportID("pager") }
    var platforms: Set<Platform> { [.ios] }
    var credentialKeys: [String] { ["url", "token", "roster", "priority"] }

    struct Credentials: TransportCredentials {
        static var transport: TransportID { TransportID("pager") }
        var url: String
        var token: Secret
        var summary: String { "pager \(url)" }
    }

    var onboarding: TransportOnboarding? {
        TransportOnboarding(
            fields: [
                CredentialField("url", prompt: "Pager URL", help: "Where the pager listens (https://…).") {
                    $0.hasPrefix("https://") ? nil : "must start with https://, not '\($0)'"
                },
                CredentialField("token", prompt: "Pager token reference", help: "The pager's token.", secret: true),
                CredentialField("roster", help: "The on-call roster (JSON).", input: .file),
                CredentialField("priority", help: "high or normal.") {
                    ["high", "normal"].contains($0) ? nil : "must be high or normal"
                },
            ],
            credentials: { answers in
                try answers.require("url", "token")
                var entries = [(key: "url", value: answers["url"]!), (key: "token", value: answers["token"]!)]
                if let roster = answers["roster"] { entries.append(("roster", roster)) }
                if let priority = answers["priority"] { entries.append(("priority", priority)) }
                return entries
            },
            emulator: TransportEmulator(name: "pager", abstract: "A pager that writes its arguments to --out.") {
                arguments in
                guard arguments.count == 3, arguments[0] == "--out" else {
                    throw CredentialProblems(["usage: hub emulate pager --out <file> <word>"])
                }
                try arguments[2].write(toFile: arguments[1], atomically: true, encoding: .utf8)
            })
    }

    func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        guard section.expectKeys(credentialKeys, required: ["url", "token"]) else { return nil }
        _ = section.filePath("roster")
        guard let url = section.url("url", allowHTTP: false), let token = section.secret("token") else { return nil }
        return Credentials(url: url, token: token)
    }

    /// A pager at `refuse.example` refuses the token, as a provider would.
    func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    {
        guard let credentials = credentials as? Credentials, credentials.url.contains("refuse.example") else {
            return []
        }
        return ["the pager at \(credentials.url) refused the token; ask its owner for a new one"]
    }

    func makeTransport(_ context: TransportContext) throws -> (any Transport)? { nil }
}

/// Collects what the command line prints as errors.
private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var text: String { lock.withLock { lines.joined(separator: "\n") } }
}

@Suite("hub map-app: flags declared by a plugin's onboarding")
struct MapAppPluginFlagsTests {
    /// Runs the command line in process with the pager plugin.
    private func hub(_ arguments: [String]) async -> (status: Int32, errors: String) {
        let errors = Lines()
        let status = await HubCLI.run(
            plugins: [PagerPlugin()], arguments: arguments, errors: { errors.append($0) })
        return (status, errors.text)
    }

    @Test("the plugin's flags write credentials.pager, a file as a reference relative to hub.yaml")
    func writes() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        try "s3cret-token".write(to: workspace.appendingPathComponent("pager.token"), atomically: true, encoding: .utf8)
        let roster = workspace.appendingPathComponent("roster.json").path
        try "[]".write(toFile: roster, atomically: true, encoding: .utf8)
        let result = await hub([
            "map-app", "--config", config, "--app", "notes.contoso.com", "--pager-url", "https://pager.example/notes",
            "--ios", "com.contoso.notes", "--pager-token", "file:pager.token", "--pager-roster=\(roster)",
            "--pager-priority", "high",
        ])
        #expect(result.status == 0, "\(result.errors)")
        let yaml = try String(contentsOfFile: config, encoding: .utf8)
        #expect(yaml.contains("pager:"), "\(yaml)")
        #expect(yaml.contains("url: https://pager.example/notes"), "\(yaml)")
        #expect(yaml.contains("token: file:pager.token"), "\(yaml)")
        #expect(yaml.contains("roster: file:roster.json"), "\(yaml)")
        #expect(yaml.contains("priority: high"), "\(yaml)")
        #expect(!yaml.contains("s3cret-token"))
        #expect(await hub(["config", "check", "--config", config]).status == 0)
    }

    @Test("a missing, invalid or literal secret field is refused naming its flag; nothing is written")
    func refused() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        let base = ["map-app", "--config", config, "--app", "notes.contoso.com", "--ios", "com.contoso.notes"]
        for (flags, message) in [
            (["--pager-url", "https://pager.example"], "--pager-token is required with --pager-url"),
            (
                ["--pager-url", "http://pager.example", "--pager-token", "env:T"],
                "--pager-url: must start with https://"
            ),
            (
                ["--pager-url", "https://pager.example", "--pager-token", "hunter2"],
                "--pager-token: is a secret: give a reference, env:NAME or file:path"
            ),
            (
                ["--pager-url", "https://pager.example", "--pager-token", "env:T", "--pager-roster", "missing.json"],
                "--pager-roster: missing.json does not exist"
            ),
            (
                ["--pager-url", "https://pager.example", "--pager-token", "env:T", "--pager-priority", "urgent"],
                "--pager-priority: must be high or normal"
            ),
        ] {
            let result = await hub(base + flags)
            #expect(result.status == 1, "\(flags): \(result.errors)")
            #expect(result.errors.contains(message), "\(flags): \(result.errors)")
            #expect(!result.errors.contains("hunter2"), "a secret typed as a value is not echoed")
            #expect(!FileManager.default.fileExists(atPath: config), "\(flags)")
        }
    }

    @Test("an unknown flag names the nearest declared one")
    func unknownFlag() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        let result = await hub([
            "map-app", "--config", config, "--app", "notes.contoso.com", "--pager-tokn", "env:T",
        ])
        #expect(result.status != 0)
        #expect(
            result.errors.contains("unknown option '--pager-tokn'; did you mean '--pager-token'?"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: config))
    }

    @Test("the first-party plugins' flags are in hub map-app --help, and their typos are named")
    func firstPartyHelp() async throws {
        let workspace = try makeWorkspace()
        let help = try await HubProcess.run(["map-app", "--help"], in: workspace)
        #expect(help.status == 0, "\(help.stderr)")
        for flag in ["--apns-key-id", "--fcm-service-account", "--wns-client-id", "--webpush-subject"] {
            #expect(help.stdout.contains(flag), "\(flag): \(help.stdout)")
        }
        let typo = try await HubProcess.run(
            ["map-app", "--app", "notes.contoso.com", "--apns-kye-id", "ABCDE12345"], in: workspace)
        #expect(typo.status != 0)
        #expect(typo.stderr.contains("did you mean '--apns-key-id'?"), "\(typo.stderr)")
    }

    @Test(
        "hub emulate <name> runs the plugin's emulator with the arguments after its name; a typo is named; the list is the plugins'"
    )
    func emulator() async throws {
        let workspace = try makeWorkspace()
        let out = workspace.appendingPathComponent("pager.out").path
        let result = await hub(["emulate", "pager", "--out", out, "ringing"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "ringing")
        let typo = await hub(["emulate", "pagr", "--out", out, "x"])
        #expect(typo.status != 0)
        #expect(typo.errors.contains("no emulator named 'pagr'; did you mean 'pager'?"), "\(typo.errors)")
        // Only this command line's plugins bring emulators: none of hub's is built in.
        #expect(typo.errors.contains("(this hub has pager)"), "\(typo.errors)")
        let none = await HubCLI.run(plugins: [], arguments: ["emulate", "apns"], errors: { _ in })
        #expect(none != 0, "hub emulate apns without the APNs plugin")

        // hub's own plugins bring the six first-party emulators.
        let help = try await HubProcess.run(["emulate", "--help"], in: workspace)
        #expect(help.status == 0, "\(help.stderr)")
        for name in ["apns", "fcm", "wns", "webpush", "unifiedpush", "webhook"] {
            #expect(help.stdout.contains("\n  \(name) "), "\(name): \(help.stdout)")
        }
        let unknown = try await HubProcess.run(["emulate", "apn"], in: workspace)
        #expect(
            unknown.stderr.contains(
                "did you mean 'apns'? (this hub has apns, fcm, wns, webpush, unifiedpush, webhook)"),
            "\(unknown.stderr)")
    }

    @Test("hub emulate <name> --help is the plugin emulator's own help; a wrong option shows its usage")
    func emulatorHelp() async throws {
        let workspace = try makeWorkspace()
        let help = try await HubProcess.run(["emulate", "apns", "--help"], in: workspace)
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdout.contains("USAGE: hub emulate apns"), "\(help.stdout)")
        #expect(help.stdout.contains("--unregistered <unregistered>"), "\(help.stdout)")
        let wrong = try await HubProcess.run(["emulate", "fcm", "--port", "many"], in: workspace)
        #expect(wrong.status == 64, "\(wrong.stdout)\n\(wrong.stderr)")
        #expect(wrong.stderr.contains("'many'"), "\(wrong.stderr)")
        #expect(wrong.stderr.contains("hub emulate fcm"), "the usage of the emulator: \(wrong.stderr)")
    }

    @Test("the wizard asks a plugin's fields (WNS for Windows) and checks each answer by the flags' rules")
    func wizard() async throws {
        let workspace = try makeWorkspace()
        let answers = [
            "chat.contoso.com", "", "windows", "Contoso.Chat_8wekyb3d8bbwe", "", "", "s-1-15-2-1",
            "ms-app://s-1-15-2-12-34", "plain-secret", "env:WNS_SECRET", "", "y",
        ]
        let output = try await HubProcess.run(
            ["map-app", "--interactive"], in: workspace, input: answers.joined(separator: "\n") + "\n",
            environment: ["WNS_SECRET": "v"])
        #expect(output.status == 0, "\(output.stderr)\n\(output.stdout)")
        #expect(output.stdout.contains("✗ 's-1-15-2-1' is not a package SID"), "\(output.stdout)")
        #expect(output.stdout.contains("✗ is a secret: give a reference, env:NAME or file:path"), "\(output.stdout)")
        let yaml = try read(workspace.appendingPathComponent("hub.yaml"))
        #expect(yaml.contains("packageSid: ms-app://s-1-15-2-12-34"), "\(yaml)")
        #expect(yaml.contains("clientSecret: env:WNS_SECRET"), "\(yaml)")
        #expect(!yaml.contains("plain-secret"))
    }

    @Test("map-app and config check run the plugin's checkCredentials: a refused token is named, nothing written")
    func checkCredentials() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        let refused = await hub([
            "map-app", "--config", config, "--app", "notes.contoso.com", "--ios", "com.contoso.notes",
            "--pager-url", "https://refuse.example/notes", "--pager-token", "env:HOME",
        ])
        #expect(refused.status == 1)
        #expect(
            refused.errors.contains("credentials.pager: the pager at https://refuse.example/notes refused the token"),
            "\(refused.errors)")
        #expect(!FileManager.default.fileExists(atPath: config))

        // Written by hand, past map-app: config check runs the same check.
        try """
        apps:
          - id: notes.contoso.com
            platforms: { ios: { appIds: [com.contoso.notes] } }
            credentials:
              pager: { url: "https://refuse.example/notes", token: env:HOME }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let check = await hub(["config", "check", "--config", config])
        #expect(check.status == 1)
        #expect(
            check.errors.contains("app notes.contoso.com: credentials.pager: the pager at https://refuse.example"),
            "\(check.errors)")
    }
}
