import Foundation
import HubTesting
import Testing

/// Runs the built `hub` (or `hub-bench`) executable as a separate process, the way operators run it.
enum HubProcess {
    typealias Output = ChildProcess.Output

    /// The `hub` binary beside the test bundle.
    static let executable = ChildProcess.built("hub")

    /// The `hub-bench` binary beside the test bundle (and beside `hub`, which it runs).
    static let benchExecutable = ChildProcess.built("hub-bench")

    /// Runs `executable` (`hub` unless told) with `arguments` in `directory` and waits for its exit.
    static func run(
        _ arguments: [String], in directory: URL, input: String? = nil, environment: [String: String] = [:],
        executable: URL = executable
    ) async throws -> Output {
        try await ChildProcess.run(executable, arguments, in: directory, input: input, environment: environment)
    }
}

/// A fresh temporary folder with copies of the HubConfig fixtures.
func makeWorkspace() throws -> URL {
    let directory = try TemporaryFolder.make("hub-cli")
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("HubConfigTests/Fixtures")
    for name in try FileManager.default.contentsOfDirectory(atPath: fixtures.path) {
        try FileManager.default.copyItem(
            at: fixtures.appendingPathComponent(name), to: directory.appendingPathComponent(name))
    }
    return directory
}

func read(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }
