import Foundation
import HubTesting
import Testing

/// Runs the built `hub` (or `hub-bench`) executable as a separate process, the way operators run it.
struct HubProcess {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `hub` binary beside the test bundle.
    static let executable = built("hub")

    /// The `hub-bench` binary beside the test bundle (and beside `hub`, which it runs).
    static let benchExecutable = built("hub-bench")

    /// The executable `name` of this build: beside the test bundle, else in the package's .build/debug.
    static func built(_ name: String) -> URL {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundleDirectory.appendingPathComponent(name)]
        for bundle in Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent(name))
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Runs `executable` (`hub` unless told) with `arguments` in `directory` and waits for its exit.
    static func run(
        _ arguments: [String], in directory: URL, input: String? = nil, environment: [String: String] = [:],
        executable: URL = executable
    ) throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
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
        let errorData = LockedData()
        let errorReader = Thread { errorData.set(stderr.fileHandleForReading.readDataToEndOfFile()) }
        errorReader.start()
        let outData = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorData.isSet { usleep(1000) }
        return Output(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errorData.value, as: UTF8.self))
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var done = false
    func set(_ value: Data) {
        lock.lock()
        data = value
        done = true
        lock.unlock()
    }
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return done
    }
    var value: Data {
        lock.lock()
        defer { lock.unlock() }
        return data
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
