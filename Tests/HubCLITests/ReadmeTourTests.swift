import Foundation
import HubTesting
import Testing

@Suite("README tour")
struct ReadmeTourTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The first ```sh block of README's "Try it", without the lines that build, start and stop the
    /// hub (the test does those), aimed at `port`.
    static func tourScript(port: Int) throws -> String {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Try it"))
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```sh\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return rest[open.upperBound..<close.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("swift build") && !$0.hasPrefix("hub serve") && !$0.hasPrefix("kill %1") }
            .joined(separator: "\n").replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
    }

    @Test("the README's tour commands run against a hub on the sample hub.yaml: every call succeeds")
    func tour() async throws {
        let workspace = try makeWorkspace()
        let port = try FreePort.pick()
        let sample = try String(contentsOf: Self.root.appendingPathComponent("hub.yaml"), encoding: .utf8)
        try sample.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
            .write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("examples"), to: workspace.appendingPathComponent("examples"))
        let hub = try await RunningHub(directory: workspace)
        #expect(hub.port == port)
        let script = try Self.tourScript(port: port)
        #expect(script.contains("hub token"))
        let bin = HubProcess.executable.deletingLastPathComponent().path
        let run = try await Shell.run(
            "set -euo pipefail\n" + script, in: workspace,
            environment: ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")])
        #expect(run.status == 0, "stdout:\n\(run.stdout)\nstderr:\n\(run.stderr)")
        // Each step's answer, in order: register, publish (curl and hub publish), the synced feed, the
        // two PATCHes, the woken long-poll, the event stream, the Graph publish.
        #expect(run.stdout.contains(#""state":"active""#), "register: \(run.stdout)")
        #expect(run.stdout.contains(#""appNotificationId":"welcome""#))
        #expect(run.stdout.contains(#""appNotificationId":"meeting""#))
        #expect(run.stderr.contains(#""changes":["#), "the synced feed: \(run.stderr)")
        #expect(run.stdout.contains(#""readState":"read""#))
        #expect(run.stdout.contains(#""userActionState":"dismissed""#))
        #expect(run.stdout.contains(#""appNotificationId":"lunch""#), "the long-poll woke with lunch")
        #expect(run.stdout.contains("data: "), "the event stream: \(run.stdout)")
        #expect(run.stdout.contains(#""appNotificationId":"graph-1""#))
        #expect(!run.stdout.contains(#""type":"https://"#), "no problem+json answer: \(run.stdout)")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }
}

/// Runs a bash script the way a person pastes it into a terminal.
enum Shell {
    static func run(
        _ script: String, in directory: URL, environment: [String: String]
    ) async throws
        -> HubProcess.Output
    {
        try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"), ["-c", script], in: directory, environment: environment)
    }
}

/// A TCP port nobody listens on right now.
enum FreePort {
    static func pick() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileReadUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
