import ArgumentParser
import Foundation
import HubCore
import Logging
import ServiceLifecycle

/// `hub emulate …`: local emulators of the push providers, for development against a hub.
struct EmulateCommand: AsyncParsableCommand {
    // Computed: the emulators of the running command's plugins are listed too.
    static var configuration: CommandConfiguration {
        let plugins = EmulatePlugin.emulators.map {
            "  \($0.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \($0.abstract)"
        }
        return CommandConfiguration(
            commandName: "emulate",
            abstract:
                "Run a local emulator of APNs, FCM, WNS, Web Push, a UnifiedPush distributor or a webhook receiver that enforces what the real service enforces.",
            discussion: plugins.isEmpty
                ? ""
                : "The transport plugins of this hub bring these emulators too (hub emulate <name> [arguments]):\n"
                    + plugins.joined(separator: "\n"),
            subcommands: [
                EmulateAPNS.self, EmulateFCM.self, EmulateWNS.self, EmulateWebPush.self, EmulateUnifiedPush.self,
                EmulateWebhook.self, EmulatePlugin.self,
            ],
            defaultSubcommand: EmulatePlugin.self
        )
    }

    /// Writes `line` to standard output at once: `print` is block-buffered when stdout is a file or a
    /// pipe (`| tee`, a test), where the banner and each request would only show up much later.
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Prints `banner` once SIGTERM and SIGINT are handled (so a caller that waits for the banner can
    /// signal at once), runs `body` (which reports what the emulator receives) until one arrives, then
    /// returns, so the command can shut its emulator down and exit 0 instead of dying of the signal.
    static func runUntilTerminated(
        banner: String, _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        var logger = Logger(label: "hub.emulate")
        logger.logLevel = .warning
        let group = ServiceGroup(
            services: [UntilTerminated(banner: banner, body: body)], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }

    /// Until SIGTERM or SIGINT, prints a line for each new element of `items` (polled every 100 ms).
    static func printUntilTerminated<Item>(
        banner: String, _ items: @escaping @Sendable () -> [Item], line: @escaping @Sendable (Item) -> String
    ) async throws {
        try await runUntilTerminated(banner: banner) {
            var shown = 0
            while !Task.isCancelled {
                let current = items()
                for item in current.dropFirst(shown) { emit(line(item)) }
                shown = current.count
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

/// The one service of an emulator command: `body`, cancelled when a signal asks for shutdown.
private struct UntilTerminated: Service {
    let banner: String
    let body: @Sendable () async throws -> Void

    func run() async throws {
        EmulateCommand.emit(banner)
        do {
            try await cancelWhenGracefulShutdown {
                try await body()
                // A body that returns early still waits for the signal.
                try await gracefulShutdown()
            }
        } catch is CancellationError {
            // The signal arrived.
        }
    }
}

/// `hub emulate <name> [arguments]`: the emulator a transport plugin brings in its onboarding
/// (``TransportOnboarding/emulator``), given the arguments after its name.
struct EmulatePlugin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin", abstract: "Run a transport plugin's emulator: hub emulate <name> [arguments].")

    @Argument(help: "The emulator's name.") var name: String?
    @Argument(parsing: .captureForPassthrough, help: "Its arguments.") var arguments: [String] = []

    /// The emulators of the running command's plugins.
    static var emulators: [TransportEmulator] { HubCLI.plugins.compactMap { $0.onboarding?.emulator } }

    func run() async throws {
        let emulators = Self.emulators
        var names: [String] = []
        for command in EmulateCommand.configuration.subcommands where command != EmulatePlugin.self {
            if let name = command.configuration.commandName { names.append(name) }
        }
        names += emulators.map { $0.name }
        guard let name else {
            throw ValidationError("name an emulator: \(names.joined(separator: ", "))")
        }
        guard let emulator = emulators.first(where: { $0.name == name }) else {
            let nearest = TransportFlags.nearest(to: name, in: names).map { "; did you mean '\($0)'?" } ?? ""
            throw ValidationError(
                "no emulator named '\(name)'\(nearest) (this hub has \(names.joined(separator: ", ")))")
        }
        try await emulator.run(arguments)
    }
}
