import Foundation
import HubEmulators
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

/// A ``makeWorkspace()`` for a hub whose app pushes to `push` (Web Push or UnifiedPush): a new
/// VAPID key in `vapid.pem` and the push service's trust root in `trustRoot`.
func makeWebPushWorkspace(
    trusting push: WebPushEmulator, trustRoot: String = "webpush-ca.pem"
) throws -> (workspace: URL, key: (privateKeyPEM: String, publicKey: [UInt8])) {
    let workspace = try makeWorkspace()
    let key = WebPushEmulator.makeVAPIDKey()
    try key.privateKeyPEM.write(to: workspace.appendingPathComponent("vapid.pem"), atomically: true, encoding: .utf8)
    try push.trustRootPEM.write(to: workspace.appendingPathComponent(trustRoot), atomically: true, encoding: .utf8)
    return (workspace, key)
}

func read(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }
