import Foundation
import HubCLI
import HubCore
import Testing

/// A toy plugin whose onboarding declares `fields` (each a `map-app` flag `--<id>-<field>`) and,
/// when `emulator` is given, an emulator of that name that writes its arguments to `--out`.
private struct ToyPlugin: TransportPlugin {
    let id: TransportID
    var fields: [String] = []
    var emulator: String?
    var platforms: Set<Platform> { [.ios] }

    var onboarding: TransportOnboarding? {
        let emulator = emulator.map { name in
            TransportEmulator(name: name, abstract: "A toy emulator.") { arguments in
                guard arguments.count == 3, arguments[0] == "--out" else {
                    throw CredentialProblems(["usage: hub emulate \(name) --out <file> <word>"])
                }
                try arguments[2].write(toFile: arguments[1], atomically: true, encoding: .utf8)
            }
        }
        guard !fields.isEmpty else { return emulator.map { TransportOnboarding(emulator: $0) } }
        return TransportOnboarding(
            fields: fields.map { CredentialField($0, help: "The toy's \($0).") },
            credentials: { answers in answers.values.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } },
            emulator: emulator)
    }

    func makeTransport(_ context: TransportContext) throws -> (any Transport)? { nil }
}

/// Collects what the command line prints as errors.
private final class ErrorLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var text: String { lock.withLock { lines.joined(separator: "\n") } }
}

@Suite("hub: transport plugins that claim the same flag, ID or emulator")
struct PluginConflictsTests {
    private func hub(_ plugins: [any TransportPlugin], _ arguments: [String]) async -> (status: Int32, errors: String) {
        let errors = ErrorLines()
        let status = await HubCLI.run(plugins: plugins, arguments: arguments, errors: { errors.append($0) })
        return (status, errors.text)
    }

    @Test("two plugins making the same map-app flag stop every command at start, naming both and the flag")
    func sameFlag() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        // `--pager-key-id` both ways: pager's `key-id` and pager-key's `id`.
        let plugins: [any TransportPlugin] = [
            ToyPlugin(id: TransportID("pager"), fields: ["url", "key-id"]),
            ToyPlugin(id: TransportID("pager-key"), fields: ["id"]),
        ]
        for arguments in [
            ["map-app", "--config", config, "--app", "notes.contoso.com", "--pager-key-id", "K"],
            ["config", "check", "--config", config], ["map-app", "--help"],
        ] {
            let result = await hub(plugins, arguments)
            #expect(result.status == 1, "\(arguments): \(result.errors)")
            #expect(
                result.errors.contains(
                    "the pager plugin's field 'key-id' and the pager-key plugin's field 'id' both make the map-app flag --pager-key-id; rename one"
                ), "\(arguments): \(result.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: config), "nothing was written")

        let twice = await hub([ToyPlugin(id: TransportID("pager"), fields: ["url", "url"])], ["map-app", "--help"])
        #expect(twice.status == 1)
        #expect(twice.errors.contains("the pager plugin declares the field 'url' twice; rename one"), "\(twice.errors)")
    }

    @Test("a plugin flag that is a map-app option already (--identity-secret, --dry-run) is refused at start")
    func mapAppOption() async throws {
        let result = await hub(
            [
                ToyPlugin(id: TransportID("identity"), fields: ["secret"]),
                ToyPlugin(id: TransportID("dry"), fields: ["run"]),
            ],
            ["config", "check"])
        #expect(result.status == 1)
        #expect(
            result.errors.contains(
                "the identity plugin's field 'secret' makes the flag --identity-secret, which is a map-app option already; rename the field"
            ), "\(result.errors)")
        #expect(result.errors.contains("the dry plugin's field 'run' makes the flag --dry-run"), "\(result.errors)")
    }

    @Test("two plugins with one ID, or two emulators with one name, are refused at start")
    func sameIDOrEmulator() async throws {
        let sameID = await hub(
            [ToyPlugin(id: TransportID("pager")), ToyPlugin(id: TransportID("pager"))], ["emulate", "--help"])
        #expect(sameID.status == 1)
        #expect(
            sameID.errors.contains("transport plugins #1 and #2 both have the ID 'pager'"), "\(sameID.errors)")

        let sameEmulator = await hub(
            [
                ToyPlugin(id: TransportID("pager"), emulator: "beeper"),
                ToyPlugin(id: TransportID("buzzer"), fields: ["url"], emulator: "beeper"),
            ], ["emulate", "beeper"])
        #expect(sameEmulator.status == 1)
        #expect(
            sameEmulator.errors.contains(
                "the pager and buzzer plugins both bring an emulator named 'beeper' (hub emulate beeper); rename one"),
            "\(sameEmulator.errors)")

        let reserved = await hub([ToyPlugin(id: TransportID("pager"), emulator: "help")], ["emulate", "help"])
        #expect(reserved.status == 1)
        #expect(
            reserved.errors.contains(
                "the pager plugin's emulator is named 'help', which hub emulate cannot run by name; rename it"),
            "\(reserved.errors)")
    }

    @Test("plugins that share nothing run: the same field names under two IDs, one emulator each")
    func noConflict() async throws {
        let workspace = try makeWorkspace()
        let out = workspace.appendingPathComponent("beeper.out").path
        let result = await hub(
            [
                ToyPlugin(id: TransportID("pager"), fields: ["url", "token"], emulator: "pager"),
                ToyPlugin(id: TransportID("beeper"), fields: ["url", "token"], emulator: "beeper"),
            ], ["emulate", "beeper", "--out", out, "beep"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "beep")
    }

    @Test(
        "a plugin with no credential fields (an emulator only, as UnifiedPush and the webhook lane): map-app asks and writes nothing for it"
    )
    func noFields() async throws {
        let workspace = try makeWorkspace()
        let config = workspace.appendingPathComponent("hub.yaml").path
        let plugins: [any TransportPlugin] = [ToyPlugin(id: TransportID("beacon"), emulator: "beacon")]
        let mapped = await hub(
            plugins, ["map-app", "--config", config, "--app", "notes.contoso.com", "--ios", "com.contoso.notes"])
        #expect(mapped.status == 0, "\(mapped.errors)")
        let yaml = try String(contentsOfFile: config, encoding: .utf8)
        #expect(yaml.contains("com.contoso.notes"), "\(yaml)")
        #expect(!yaml.contains("beacon"), "no credentials.beacon: \(yaml)")
        let flag = await hub(
            plugins, ["map-app", "--config", config, "--app", "notes.contoso.com", "--beacon-url", "x"])
        #expect(flag.status != 0)
        #expect(flag.errors.contains("unknown option '--beacon-url'"), "\(flag.errors)")
        let out = workspace.appendingPathComponent("beacon.out").path
        #expect(await hub(plugins, ["emulate", "beacon", "--out", out, "lit"]).status == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "lit")

        // The first-party ones: hub's map-app has no --unifiedpush-… or --webhooks-… flag, and the
        // wizard asks no UnifiedPush or webhook question.
        let help = try await HubProcess.run(["map-app", "--help"], in: workspace)
        #expect(help.status == 0, "\(help.stderr)")
        #expect(!help.stdout.contains("--unifiedpush-") && !help.stdout.contains("--webhooks-"), "\(help.stdout)")
    }
}
