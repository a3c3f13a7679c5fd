import Foundation
import Testing

@Suite("hub-bench")
struct BenchCommandTests {
    @Test("bench rss starts `hub serve`, reads its resident memory from /proc and needs a clean SIGTERM exit")
    func rss() async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let output = try await HubProcess.run(
            ["rss", "--runs", "1", "--idle", "1"], in: workspace, executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        let reading = output.stdout.split(separator: "\n").first { $0.hasPrefix("run 1: VmRSS ") }
        let megabytes = reading.flatMap { Double($0.dropFirst("run 1: VmRSS ".count).prefix { $0 != " " }) }
        // A debug build of the hub, dynamically linked: more than 5 MB, far less than a gigabyte.
        #expect(megabytes.map { (5...1_000).contains($0) } == true, "\(output.stdout)")
        #expect(output.stdout.contains("idle RSS: min"), "\(output.stdout)")

        // A configuration that cannot start is reported, not measured.
        try "apps: [".write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let broken = try await HubProcess.run(
            ["rss", "--runs", "1", "--idle", "1"], in: workspace, executable: HubProcess.benchExecutable)
        #expect(broken.status != 0)
        #expect(broken.stderr.contains("did not report listening"), "\(broken.stderr)")
    }

    @Test("the daemon ships no benchmarks: `hub --help` lists no bench command and `hub bench` is unknown")
    func notInHub() async throws {
        let help = try await HubProcess.run(["--help"], in: FileManager.default.temporaryDirectory)
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdout.contains("serve"), "\(help.stdout)")
        let subcommands = help.stdout.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        #expect(!subcommands.contains("bench"), "\(help.stdout)")
        let bench = try await HubProcess.run(["bench", "rss"], in: FileManager.default.temporaryDirectory)
        #expect(bench.status != 0)
    }

    @Test("hub-bench without a hub beside it says where it looked and how to build it")
    func hubMissing() async throws {
        // A hub-bench alone in a folder (a hard link when the file system allows, else a copy).
        let folder = try makeWorkspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("hub-bench")
        do {
            try FileManager.default.linkItem(at: HubProcess.benchExecutable, to: alone)
        } catch {
            try FileManager.default.copyItem(at: HubProcess.benchExecutable, to: alone)
        }
        let output = try await HubProcess.run(["rss", "--runs", "1", "--idle", "1"], in: folder, executable: alone)
        #expect(output.status != 0)
        #expect(output.stderr.contains("no hub executable at \(folder.path)/hub"), "\(output.stderr)")
        #expect(output.stderr.contains("swift build -c release"), "\(output.stderr)")
    }
}

@Suite("hub-bench pipeline")
struct PipelineBenchTests {
    /// A few seconds of every phase with small numbers: what a debug build can do in ~15 s.
    static let tiny = [
        "pipeline", "--seconds", "2", "--users", "200", "--rate", "100", "--latency-seconds", "1",
        "--transport-seconds", "0.5", "--transport-concurrency", "16", "--connections", "8",
    ]

    @Test("bench pipeline publishes through `hub serve` to the APNs emulator and prints every figure")
    func sqlite() async throws {
        let output = try await HubProcess.run(
            Self.tiny, in: FileManager.default.temporaryDirectory, executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        try Self.checkFigures(output.stdout, instances: 1)
    }

    @Test(
        "bench pipeline with two PostgreSQL instances publishes on A while both dispatch",
        .enabled(if: ProcessInfo.processInfo.environment["HUB_TEST_DATABASE_URL"] != nil))
    func postgresTwoInstances() async throws {
        let output = try await HubProcess.run(
            Self.tiny + ["--store", "postgres", "--instances", "2"], in: FileManager.default.temporaryDirectory,
            executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        try Self.checkFigures(output.stdout, instances: 2)
        #expect(output.stdout.contains("on instance A, both instances dispatching"), "\(output.stdout)")
    }

    @Test("bench pipeline --batch publishes batches of N users a request and prints every figure")
    func batches() async throws {
        let output = try await HubProcess.run(
            Self.tiny + ["--batch", "50"], in: FileManager.default.temporaryDirectory,
            executable: HubProcess.benchExecutable)
        #expect(output.status == 0, "\(output.stdout)\n\(output.stderr)")
        try Self.checkFigures(output.stdout, instances: 1, batch: 50)
    }

    @Test("bench pipeline refuses two instances on SQLite")
    func twoSQLiteInstances() async throws {
        let output = try await HubProcess.run(
            ["pipeline", "--instances", "2"], in: FileManager.default.temporaryDirectory,
            executable: HubProcess.benchExecutable)
        #expect(output.status != 0)
        #expect(output.stderr.contains("several instances need --store postgres"), "\(output.stderr)")
    }

    /// Every figure is printed, and pushes reached the emulator in both the load and the latency phase.
    static func checkFigures(_ stdout: String, instances: Int, batch: Int? = nil) throws {
        func line(_ prefix: String) -> Substring? { stdout.split(separator: "\n").first { $0.hasPrefix(prefix) } }
        /// The number right after `prefix` on its line.
        func number(after prefix: String) -> Double? {
            line(prefix).flatMap { Double($0.dropFirst(prefix.count).prefix { $0.isNumber || $0 == "." }) }
        }
        #expect((number(after: "transport alone: ") ?? 0) > 0, "\(stdout)")
        #expect((number(after: "HTTP ceiling: ") ?? 0) > 0, "\(stdout)")
        #expect((number(after: "throughput: ") ?? 0) > 0, "\(stdout)")
        #expect((number(after: "publishes ÷ HTTP ceiling: ") ?? 0) > 0, "\(stdout)")
        if let batch {
            #expect(line("throughput: ")?.contains("accepted notifications/s") == true, "\(stdout)")
            #expect(line("throughput: ")?.contains("batches of \(batch) users a request") == true, "\(stdout)")
            #expect(line("hub CPU: ")?.contains("per 1,000 notifications accepted") == true, "\(stdout)")
        } else {
            #expect(line("throughput: ")?.contains("accepted publishes/s") == true, "\(stdout)")
        }
        #expect((number(after: "deliveries during the load: ") ?? 0) > 0, "\(stdout)")
        #expect((number(after: "after the load: ") ?? 0) > 0, "\(stdout)")
        #expect(line("after the load: ")?.contains("distinct users: ") == true, "\(stdout)")
        #expect(line("hub CPU: ")?.contains("CPU-s per 1,000 deliveries") == true, "\(stdout)")
        #expect(number(after: "pipeline ÷ transport: ") != nil, "\(stdout)")
        let latency = line("latency at 100 publishes/s")
        #expect(latency?.contains("publish → provider p50 ") == true, "\(stdout)")
        #expect(latency?.contains("p99 ") == true, "\(stdout)")
        // Pushes arrived in the latency phase too: "(N of M pushes" with N > 0.
        let arrived = latency.flatMap { $0.range(of: " ms (") }.flatMap { range in
            latency.flatMap { Int($0[range.upperBound...].prefix { $0.isNumber }) }
        }
        #expect((arrived ?? 0) > 0, "\(stdout)")
        #expect(line("hub CPU at 100 publishes/s: ")?.contains("CPU-s per 1,000 publishes") == true, "\(stdout)")
        #expect((number(after: "HTTP floor at 100 requests/s: ") ?? 0) > 0, "\(stdout)")
        #expect(line("hub CPU at 100 publishes/s: ")?.contains("× the HTTP floor") == true, "\(stdout)")
        #expect(stdout.contains("\(instances) instance\(instances == 1 ? "" : "s")"), "\(stdout)")
    }
}
