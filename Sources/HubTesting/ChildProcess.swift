public import Foundation

/// Runs executables (`hub`, an embedder's own hub, `bash`, `python3`) as child processes, the way
/// operators run them.
public enum ChildProcess {
    /// What a finished process printed, and how it exited.
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// The executable `name` of this build (`hub`, `hub-bench`, `webhook-hub`): beside the test
    /// bundle, else in the package's .build/debug.
    public static func built(_ name: String) -> URL {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundleDirectory.appendingPathComponent(name)]
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        // Sources/HubTesting/ChildProcess.swift → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Runs `executable` with `arguments` in `directory` (the current one when `nil`), with
    /// `environment` over this process's, writes `input` to its standard input and closes it, and
    /// waits for its exit.
    ///
    /// The waiting happens on a thread of its own, never on one of the few threads that run Swift
    /// tasks: a test that blocked one while its child talks to an emulator in the test process
    /// (whose handlers are tasks) could starve the emulator, and every other test running in
    /// parallel, until the child gives up.
    public static func run(
        _ executable: URL, _ arguments: [String], in directory: URL? = nil, input: String? = nil,
        environment: [String: String] = [:]
    ) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try runBlocking(executable, arguments, in: directory, input: input, environment: environment)
                    })
            }
        }
    }

    /// ``run(_:_:in:input:environment:)`` on the calling thread: only for what cannot await (a
    /// test's enabling condition), and only for a process that ends by itself at once.
    static func runBlocking(
        _ executable: URL, _ arguments: [String], in directory: URL? = nil, input: String? = nil,
        environment: [String: String] = [:]
    ) throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        let stderr = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        // Read both pipes fully before waiting, so a chatty process cannot block on a full pipe.
        let errorData = DataHandOff()
        let errorReader = Thread { errorData.set(stderr.fileHandleForReading.readDataToEndOfFile()) }
        errorReader.start()
        let outData = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errorData.wait(), as: UTF8.self))
    }
}

/// A server process (`hub serve`, or an embedder's own hub) listening on a port of its choice,
/// which it names in its `hub listening on http://<host>:<port>` line on standard error.
public final class ListeningProcess: @unchecked Sendable {
    public let process = Process()
    /// The folder it runs in.
    public let directory: URL
    private let lock = NSLock()
    private var errorText = ""
    /// The port it listens on (connect to 127.0.0.1, whatever host it names).
    public private(set) var port = 0

    /// Starts `executable` with `arguments` in `directory` (with `environment` over this process's)
    /// and waits up to 60 seconds for it to listen.
    /// - Throws: ``ListeningProcessDidNotStart`` with what it printed, when it exits or does not listen in time.
    public init(
        _ executable: URL, _ arguments: [String], in directory: URL, environment: [String: String] = [:]
    ) async throws {
        self.directory = directory
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.errorText += String(decoding: data, as: UTF8.self)
            self.lock.unlock()
        }
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let line = log.split(separator: "\n").first(where: { $0.contains("hub listening on") }),
                let start = line.range(of: "hub listening on http://"),
                let range = line[start.upperBound...].range(of: ":")
            {
                // Any host (127.0.0.1, 0.0.0.0 in a container's configuration); the tests connect to 127.0.0.1.
                let digits = line[range.upperBound...].prefix { $0.isNumber }
                port = Int(digits) ?? 0
                if port > 0 { return }
            }
            if !process.isRunning { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        process.terminate()
        throw ListeningProcessDidNotStart(
            command: ([executable.lastPathComponent] + arguments).joined(separator: " "), log: log)
    }

    /// What it has written to standard error so far.
    public var log: String {
        lock.lock()
        defer { lock.unlock() }
        return errorText
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Sends it the signal `number` (`SIGTERM`, `SIGKILL`, …).
    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to exit, at most `timeout` seconds.
    /// - Returns: its exit status, minus the signal's number after a death by signal, or `nil`.
    public func waitForExit(timeout: TimeInterval = 20) async -> Int32? {
        await process.waitForExit(timeout: timeout)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// A ``ListeningProcess`` that exited, or did not listen within a minute.
public struct ListeningProcessDidNotStart: Error, CustomStringConvertible {
    /// The command line.
    public var command: String
    /// What it wrote to standard error.
    public var log: String
    public var description: String { "\(command) did not start:\n\(log)" }
}

/// Data one thread sets once and another waits for.
private final class DataHandOff: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    func set(_ value: Data) {
        data = value
        done.signal()
    }

    /// Blocks until ``set(_:)`` was called (the semaphore orders the write before this read).
    func wait() -> Data {
        done.wait()
        return data
    }
}

extension Process {
    /// Waits for the process to exit, at most `timeout` seconds, suspending (not blocking a task
    /// thread) between looks.
    /// - Returns: its exit status; after a death by signal, minus the signal's number (that is not
    ///   a clean exit, whatever the number); `nil` while it still runs.
    public func waitForExit(timeout: TimeInterval = 20) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        guard !isRunning else { return nil }
        return terminationReason == .exit ? terminationStatus : -terminationStatus
    }
}
