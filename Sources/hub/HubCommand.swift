import ArgumentParser

@main
struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "NotificationHub: notify a person on every device they use, and keep read / dismissed state in step.",
        subcommands: [
            ServeCommand.self, MapAppCommand.self, ConfigCommand.self, BenchCommand.self, EmulateCommand.self,
        ]
    )
}

/// The `--config` option every command shares.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path of hub.yaml.")
    var config: String = "hub.yaml"
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
