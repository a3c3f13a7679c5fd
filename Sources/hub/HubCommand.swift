import ArgumentParser
import HubConfig

@main
struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "NotificationHub: notify a person on every device they use, and keep read / dismissed state in step.",
        version: HubVersion.current,
        subcommands: [
            ServeCommand.self, MapAppCommand.self, ConfigCommand.self, TokenCommand.self, PublishCommand.self,
            HealthCommand.self, EmulateCommand.self,
        ]
    )
}

/// The `--config` option every command shares.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path of hub.yaml.")
    var config: String = "hub.yaml"

    /// Loads hub.yaml, printing every diagnostic to standard error; exits 1 when it has errors.
    func loadOrExit() throws -> HubFile {
        let result = ConfigLoader().load(path: config)
        for diagnostic in result.diagnostics { printError(diagnostic.description) }
        guard let file = result.file, result.errors.isEmpty else {
            printError("\(config): \(result.errors.count) error(s)")
            throw ExitCode(1)
        }
        return file
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    var stream = StandardError()
    print(text, to: &stream)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleStandardError.write(string)
    }
}
