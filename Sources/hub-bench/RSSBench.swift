import ArgumentParser
import Foundation

/// `hub-bench rss`: the resident memory of an idle `hub serve`, as the kernel reports it.
struct RSSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rss",
        abstract: "Idle resident memory of `hub serve`: starts it, lets it idle, reads /proc/PID/status.",
        discussion: """
            Runs `hub serve` (the `hub` beside this executable) with --config, waits for its "hub \
            listening" log line (the log level must be notice or lower), lets it idle, prints VmRSS with its anonymous \
            and file-backed parts, then stops it with SIGTERM. Run a release build: \
            swift build -c release && .build/release/hub-bench rss. Code pages count \
            only when the kernel maps them, so a binary just written (all of it in the page cache) \
            reads a few MB higher on its first runs.
            """)

    @Option(help: "The hub.yaml to serve (its port must be free).") var config = "hub.yaml"
    @Option(help: "Seconds of idling before the reading.") var idle = 5
    @Option(help: "How many times to start, read and stop the hub.") var runs = 3

    func run() async throws {
        let executable = try HubExecutable.path()
        print("hub-bench rss — \(executable) serve --config \(config), \(idle) s idle, \(runs) runs")
        var totals: [Double] = []
        for run in 1...max(1, runs) {
            let reading = try await Self.measure(executable: executable, config: config, idle: idle)
            totals.append(reading.total)
            print(
                String(
                    format: "run %d: VmRSS %.1f MB (anonymous %.1f MB, file-backed %.1f MB)", run, reading.total,
                    reading.anonymous, reading.file))
        }
        let sorted = totals.sorted()
        print(
            String(
                format: "idle RSS: min %.1f MB, median %.1f MB, max %.1f MB (target ≤ 40 MB)", sorted.first ?? 0,
                BenchCommand.median(totals), sorted.last ?? 0))
    }

    struct Reading {
        var total: Double
        var anonymous: Double
        var file: Double
    }

    static func measure(executable: String, config: String, idle: Int) async throws -> Reading {
        let hub = try await ServedHub.start(executable: executable, config: config)
        let process = hub.process
        defer { if process.isRunning { process.terminate() } }
        try await Task.sleep(for: .seconds(idle))
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        func megabytes(_ field: String) -> Double {
            let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
            return (kilobytes.flatMap { Double($0) } ?? 0) / 1024
        }
        let reading = Reading(total: megabytes("VmRSS"), anonymous: megabytes("RssAnon"), file: megabytes("RssFile"))
        process.terminate()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw ValidationError("hub serve did not stop cleanly on SIGTERM (status \(process.terminationStatus))")
        }
        return reading
    }
}
