import Foundation

/// One `hub serve` child process of `hub-bench pipeline`: the `hub` beside hub-bench, on port 0, whose
/// CPU time is read from /proc so that the bench's own load and emulator do not count.
final class ServeProcess: @unchecked Sendable {
    let process = Process()
    private(set) var port = 0
    private let output = Shared("")

    var pid: Int32 { process.processIdentifier }

    /// Starts `hub serve --config <config>` and waits for its "hub listening on" line.
    init(config: String, directory: URL, environment: [String: String]) async throws {
        let executable = try HubExecutable.path()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--config", config]
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let output = self.output
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            let text = String(decoding: data, as: UTF8.self)
            // The start and the latest 32 KB: warnings under load must not fill the memory.
            output.withLock { log in
                log += text
                if log.utf8.count > 64 * 1024 {
                    log = String(log.prefix(8 * 1024)) + "\n…\n" + String(log.suffix(32 * 1024))
                }
            }
        }
        try process.run()
        let started = ContinuousClock.now
        while true {
            let log = output.withLock { $0 }
            if let line = log.split(separator: "\n").first(where: { $0.contains("hub listening on") }),
                let range = line.range(of: "127.0.0.1:"),
                let port = Int(line[range.upperBound...].prefix { $0.isNumber })
            {
                self.port = port
                return
            }
            guard process.isRunning, ContinuousClock.now - started < .seconds(60) else {
                if process.isRunning { process.terminate() }
                throw ValidationErrorText(
                    "hub serve did not report listening within 60 s "
                        + "(\(process.isRunning ? "still running" : "exit \(process.terminationStatus)")):\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// What the process wrote (its start and its latest output).
    var log: String { output.withLock { $0 } }

    /// User and system CPU seconds of the process so far, from /proc/PID/stat.
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        // After "pid (comm)": state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGTERM, then waits up to 30 s for the drain, then SIGKILL. - Returns: whether it exited 0.
    @discardableResult
    func stop() async -> Bool {
        guard process.isRunning else { return process.terminationStatus == 0 }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return false
        }
        return process.terminationReason == .exit && process.terminationStatus == 0
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// The sum of the CPU seconds of several hub processes.
extension [ServeProcess] {
    func cpuSeconds() -> Double { map { $0.cpuSeconds() }.reduce(0, +) }
}
