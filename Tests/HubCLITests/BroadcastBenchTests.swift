import Foundation
import Testing

@Suite("hub-bench broadcast")
struct BroadcastBenchTests {
    /// Small numbers: what a debug build does in seconds.
    static let tiny = [
        "broadcast", "--users", "1500", "--chunk", "100", "--probe-rate", "50", "--probe-seconds", "1",
        "--transport-seconds", "0.5", "--transport-concurrency", "16", "--connections", "8",
    ]

    @Test("bench broadcast prints every figure of the issue in one run, every user tapped")
    func figures() async throws {
        let output = try await HubProcess.run(
            Self.tiny, in: FileManager.default.temporaryDirectory, executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        let stdout = output.stdout
        for prefix in [
            "transport alone: ", "HTTP ceiling: ", "single publishes alone: ", "published 1501 users",
            "hub RSS: ", "CPU during the broadcast: ", "single publishes during it: ",
        ] {
            #expect(stdout.contains(prefix), "missing '\(prefix)' in:\n\(stdout)")
        }
        #expect(stdout.contains(": 202 in "), "\(stdout)")
        #expect(stdout.contains("to 1500 of 1500 users"), "every user tapped:\n\(stdout)")
        #expect(stdout.contains("× the transport alone"), "\(stdout)")
    }

    @Test("bench broadcast --kill-halfway kills hub serve, restarts it and every user still gets it")
    func killHalfway() async throws {
        let output = try await HubProcess.run(
            Self.tiny + ["--kill-halfway"], in: FileManager.default.temporaryDirectory,
            executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        let stdout = output.stdout
        #expect(stdout.contains("killed hub serve (pid "), "\(stdout)")
        let line = try #require(stdout.split(separator: "\n").first { $0.hasPrefix("kill -9 halfway") }, "\(stdout)")
        #expect(line.contains("1500 of 1500 users tapped"), "\(line)")
        #expect(line.hasSuffix(", 0 missed"), "\(line)")
    }
}
