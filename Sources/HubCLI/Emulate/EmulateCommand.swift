import ArgumentParser
import HubConfig
import HubCore

/// `hub emulate <name> [arguments]`: the emulators the transport plugins bring in their onboarding
/// (``TransportOnboarding/emulator``): `apns`, `fcm`, `wns`, `webpush`, `unifiedpush` and `webhook`
/// for `hub`'s plugins, and those of an embedder's own. The command holds no emulator of its own.
struct EmulateCommand: AsyncParsableCommand {
    // Computed: the emulators are those of the running command's plugins.
    static var configuration: CommandConfiguration {
        let emulators = EmulatePlugin.emulators.map { emulator in
            "  \(emulator.name.padding(toLength: 14, withPad: " ", startingAt: 0)) "
                + wrapped(emulator.abstract, width: 61, indent: 17)
        }
        return CommandConfiguration(
            commandName: "emulate",
            abstract:
                "Run a local emulator of a push provider (or a webhook receiver) that enforces what the real service enforces.",
            discussion: emulators.isEmpty
                ? "This hub's transport plugins bring no emulator."
                : "The emulators of this hub's transport plugins (hub emulate <name> --help for each one's options):\n"
                    + emulators.joined(separator: "\n"),
            subcommands: [EmulatePlugin.self],
            defaultSubcommand: EmulatePlugin.self
        )
    }
}

/// `text` in lines of at most `width` characters (a longer word stays whole), the lines after the
/// first indented by `indent` spaces: a list of `--help` that ArgumentParser does not wrap again.
private func wrapped(_ text: String, width: Int, indent: Int) -> String {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty && line.count + 1 + word.count > width {
            lines.append(line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    lines.append(line)
    return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
}

/// `hub emulate <name> [arguments]`: the emulator a transport plugin brings in its onboarding
/// (``TransportOnboarding/emulator``), given the arguments after its name.
struct EmulatePlugin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin", abstract: "Run a transport plugin's emulator: hub emulate <name> [arguments].",
        shouldDisplay: false)

    @Argument(help: "The emulator's name.") var name: String?
    @Argument(parsing: .captureForPassthrough, help: "Its arguments.") var arguments: [String] = []

    /// The emulators of the running command's plugins, in the plugins' order.
    static var emulators: [TransportEmulator] { HubCLI.plugins.compactMap { $0.onboarding?.emulator } }

    func run() async throws {
        let emulators = Self.emulators
        let names = emulators.map(\.name)
        let listed = names.isEmpty ? "none" : names.joined(separator: ", ")
        guard let name else { throw ValidationError("name an emulator: \(listed)") }
        guard let emulator = emulators.first(where: { $0.name == name }) else {
            let nearest = TransportFlags.nearest(to: name, in: names).map { "; did you mean '\($0)'?" } ?? ""
            throw ValidationError("no emulator named '\(name)'\(nearest) (this hub has \(listed))")
        }
        // Captured: an emulator may print from a task of its own, where the command's task-local
        // context is not set.
        let plugins = HubCLI.plugins
        let errorSink = HubCLI.errorSink
        let report: @Sendable (String) -> Void = { line in
            if let errorSink { errorSink(line) } else { printError(line) }
        }
        let context = EmulatorContext(
            arguments: arguments,
            apps: { path in
                let result = ConfigLoader(plugins: plugins).load(path: path)
                for diagnostic in result.diagnostics { report(diagnostic.description) }
                return result.file?.apps
            },
            printError: report)
        try await emulator.run(context)
    }
}
