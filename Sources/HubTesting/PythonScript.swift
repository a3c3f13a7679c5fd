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
        (try? ChildProcess.runBlocking(python, ["python3", "-c", "import \(modules)"]).status) == 0
    }

    /// Runs `script` with `arguments` (and `environment` over the process's); returns its standard
    /// output, throws with its standard error.
    public static func run(
        _ script: String, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> String {
        let result = try await ChildProcess.run(
            python, ["python3", "-c", script] + arguments, environment: environment)
        guard result.status == 0 else {
            throw Failure(description: "python3 exited \(result.status): \(result.stderr)")
        }
        return result.stdout
    }

    private static let python = URL(fileURLWithPath: "/usr/bin/env")
}
