import Foundation
import Logging
import ServiceLifecycle

/// How an emulator of `hub emulate` talks to the developer: a banner once it listens, then a line
/// per request it answers, until SIGTERM or SIGINT (after which it shuts down and exits 0).
public enum EmulatorConsole {
    /// Writes `line` to standard output at once: `print` is block-buffered when stdout is a file or a
    /// pipe (`| tee`, a test), where the banner and each request would only show up much later.
    /// - Parameter line: the line, without its line feed.
    public static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Prints `banner` once SIGTERM and SIGINT are handled (so a caller that waits for the banner can
    /// signal at once), runs `body` (which reports what the emulator receives) until one arrives, then
    /// returns, so the command can shut its emulator down and exit 0 instead of dying of the signal.
    /// - Parameters:
    ///   - banner: what the emulator is and how to point a hub at it.
    ///   - body: reports what the emulator receives; may return early.
    public static func runUntilTerminated(
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
    /// - Parameters:
    ///   - banner: printed first, as ``runUntilTerminated(banner:_:)`` does.
    ///   - items: what the emulator has received so far, oldest first.
    ///   - line: the line printed for one item.
    public static func printUntilTerminated<Item>(
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
        EmulatorConsole.emit(banner)
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
