import Foundation

/// Runs `python3` scripts that drive our emulators and transports with real client libraries from
/// PyPI (pywebpush, http-ece, firebase-admin). `.ci/run` installs the libraries; elsewhere a suite
/// runs when ``canImport(_:)`` says they are there (and always under `CI=true`, so CI never skips).
public enum PythonScript {
    /// A script that exited with a failure.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether `python3` can import `modules` (`"pywebpush, http_ece"`).
    public static func canImport(_ modules: String) -> Bool {
        (try? runSync(["-c", "import \(modules)"], environment: [:]).status) == 0
    }

    /// Runs `script` with `arguments` (and `environment` over the process's); returns its standard
    /// output, throws with its standard error.
    public static func run(
        _ script: String, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> String {
        let result = try await Task.detached { try runSync(["-c", script] + arguments, environment: environment) }.value
        guard result.status == 0 else {
            throw Failure(description: "python3 exited \(result.status): \(result.error)")
        }
        return result.output
    }

    private static func runSync(
        _ arguments: [String], environment: [String: String]
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}
