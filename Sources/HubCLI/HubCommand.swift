import ArgumentParser
import HubConfig
public import HubCore

/// The `hub` command line as a library: an executable is `hub` with the transport plugins it
/// names, so an embedder's own transport is configured in hub.yaml, run by `hub serve`, checked by
/// `hub config check` and `hub map-app` like the first-party ones.
///
/// ```swift
/// // Sources/my-hub/main.swift
/// import HubCLI
/// import HubPolling
/// import MyTransport
///
/// await HubCLI.main(plugins: [PollingPlugin(), WebhookPlugin()])
/// ```
public enum HubCLI {
    /// What the running command was given (set by ``run(plugins:arguments:errors:)``), in one
    /// task-local value: two nested `withValue`s of the top-level task crashed the release build
    /// in `swift_task_localValuePush` (Swift 6.3.1), while one push works.
    struct Context: Sendable {
        /// The transport plugins.
        var plugins: [any TransportPlugin] = []
        /// Where error messages go: standard error when `nil`.
        var errorSink: (@Sendable (String) -> Void)?
    }

    @TaskLocal static var context = Context()

    /// The plugins of the running command (set by ``main(plugins:arguments:)``).
    static var plugins: [any TransportPlugin] { context.plugins }

    /// Where error messages go: standard error unless ``run(plugins:arguments:errors:)`` was given a sink.
    static var errorSink: (@Sendable (String) -> Void)? { context.errorSink }

    /// Parses the arguments (the process's by default) and runs the command with `plugins`: the
    /// transports `serve` runs, `config check` and `map-app` read, and `emulate` offers. Exits the
    /// process.
    /// - Parameters:
    ///   - plugins: one per transport ID; polling is not added for you.
    ///   - arguments: the arguments without the executable's name; `nil` for the process's.
    public static func main(plugins: [any TransportPlugin], arguments: [String]? = nil) async -> Never {
        let status = await run(plugins: plugins, arguments: arguments)
        HubCommand.exit(withError: status == 0 ? nil : ExitCode(status))
    }

    /// Parses the arguments and runs the command with `plugins`, as ``main(plugins:arguments:)`` does,
    /// without exiting: for a test that drives the command line in process (a plugin of its own, say).
    /// - Parameters:
    ///   - plugins: one per transport ID; polling is not added for you.
    ///   - arguments: the arguments without the executable's name; `nil` for the process's.
    ///   - errors: receives the error messages (each line as printed); `nil` for standard error.
    /// - Returns: the exit status: 0 when the command succeeded.
    public static func run(
        plugins: [any TransportPlugin], arguments: [String]? = nil, errors: (@Sendable (String) -> Void)? = nil
    ) async -> Int32 {
        await $context.withValue(Context(plugins: plugins, errorSink: errors)) {
            // Plugins that claim the same ID, flag or emulator stop every command: which of them a
            // flag reaches would otherwise depend on their order.
            let conflicts = PluginConflicts.problems(plugins, mapAppOptions: MapAppCommand.ownOptions)
            guard conflicts.isEmpty else {
                for conflict in conflicts { printError("Error: \(conflict)") }
                return 1
            }
            do {
                var command = try HubCommand.parseAsRoot(arguments)
                if var command = command as? any AsyncParsableCommand {
                    try await command.run()
                } else {
                    try command.run()
                }
                return 0
            } catch {
                let message = HubCommand.fullMessage(for: error)
                let status = HubCommand.exitCode(for: error).rawValue
                if !message.isEmpty { status == 0 ? print(message) : printError(message) }
                return status
            }
        }
    }
}

struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "NotificationHub: notify a person on every device they use, and keep read / dismissed state in step.",
        version: HubVersion.current,
        subcommands: [
            ServeCommand.self, MapAppCommand.self, ConfigCommand.self, TokenCommand.self, PublishCommand.self,
            BroadcastCommand.self, HealthCommand.self, EmulateCommand.self,
        ]
    )
}

/// The `--config` option every command shares.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path of hub.yaml.")
    var config: String = "hub.yaml"

    /// Loads hub.yaml, printing every diagnostic to standard error; exits 1 when it has errors.
    func loadOrExit() throws -> HubFile {
        let result = ConfigLoader(plugins: HubCLI.plugins).load(path: config)
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
    if let sink = HubCLI.errorSink { return sink(text) }
    var stream = StandardError()
    print(text, to: &stream)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleStandardError.write(string)
    }
}
