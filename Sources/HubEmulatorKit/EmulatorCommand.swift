public import ArgumentParser
public import HubCore

/// An emulator's command line, declared with ArgumentParser: its options, `--help` and usage
/// errors come from the declaration, as those of `hub`'s own commands do.
///
/// ```swift
/// struct PagerEmulatorCommand: EmulatorCommand {
///     static let configuration = CommandConfiguration(
///         commandName: "hub emulate pager", abstract: "Run a pager on 127.0.0.1.")
///     @Option(help: "Port on 127.0.0.1; 0 picks a free one.") var port = 0
///     func run(in context: EmulatorContext) async throws { … }
/// }
///
/// // In the plugin's onboarding:
/// TransportOnboarding(emulator: .command(PagerEmulatorCommand.self, name: "pager"))
/// ```
///
/// Its `commandName` is what usage lines show (`hub emulate pager`); the name after `hub emulate`
/// is given to ``TransportEmulator/command(_:name:)``.
public protocol EmulatorCommand: ParsableCommand {
    /// Runs the emulator until the process is stopped.
    /// - Parameter context: what `hub emulate` was given (hub.yaml's apps through it, say).
    func run(in context: EmulatorContext) async throws
}

extension TransportEmulator {
    /// The emulator run by an ``EmulatorCommand``: `hub emulate <name> [options]` parses the options
    /// with it; `--help` prints its help and a wrong option its usage, as a command of `hub` does.
    /// - Parameters:
    ///   - type: the command.
    ///   - name: the name after `hub emulate`.
    public static func command<Command: EmulatorCommand>(_ type: Command.Type, name: String) -> TransportEmulator {
        TransportEmulator(
            name: name, abstract: Command.configuration.abstract,
            runWith: { context in
                let command: Command
                do {
                    command = try Command.parse(context.arguments)
                } catch {
                    // Rendered here, by the command the arguments were meant for (`hub`'s own
                    // rendering would show `hub`'s usage).
                    let status = Command.exitCode(for: error)
                    let message = Command.fullMessage(for: error)
                    if status == .success {
                        EmulatorConsole.emit(message)
                    } else {
                        context.printError(message)
                    }
                    throw status
                }
                try await command.run(in: context)
            })
    }
}
