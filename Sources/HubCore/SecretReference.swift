public import Foundation

/// Secret references as hub.yaml and `hub map-app` take them: `env:NAME`, `file:path`, or (where
/// allowed) an inline value.
public enum SecretReference {
    /// Why a reference did not resolve; the message names the variable or path, never a secret.
    public struct Problem: Error, Sendable, Equatable {
        /// Follows the name of the field, its separator included: "'clientSecret'" + " refers to …".
        public var message: String
    }

    package static let unsetMarker = "which is not set; export"

    /// Whether a diagnostic's message is about an `env:` reference to a variable that is not set
    /// (`hub map-app` keeps such references: the variable is set where the hub runs).
    public static func isUnsetVariable(_ message: String) -> Bool { message.contains(unsetMarker) }

    /// Resolves `reference`: `env:NAME` (a variable of `environment`), `file:path` (a file, relative
    /// to `directory`), or an inline value when `inline` (its source is then `"inline"`). A text
    /// file's final line breaks are dropped (`echo key > file` writes one); `binary` files (a .p12)
    /// are kept byte for byte.
    public static func resolve(
        _ reference: String, relativeTo directory: String,
        environment: [String: String] = ProcessInfo.processInfo.environment, binary: Bool = false,
        inline: Bool = true
    ) -> Result<Secret, Problem> {
        if reference.hasPrefix("env:") {
            let name = String(reference.dropFirst(4))
            guard !name.isEmpty else {
                return .failure(Problem(message: ": write env:NAME with the name of an environment variable"))
            }
            guard let value = environment[name], !value.isEmpty else {
                return .failure(
                    Problem(message: " refers to the environment variable \(name), \(unsetMarker) \(name)"))
            }
            return .success(Secret(value, source: reference))
        }
        if reference.hasPrefix("file:") {
            let relative = String(reference.dropFirst(5))
            let full =
                relative.hasPrefix("/")
                ? relative : URL(fileURLWithPath: directory).appendingPathComponent(relative).path
            guard let data = FileManager.default.contents(atPath: full) else {
                return .failure(
                    Problem(
                        message: FileManager.default.fileExists(atPath: full)
                            ? " refers to \(full), which cannot be read; check its permissions"
                            : " refers to \(full), which does not exist; create it or fix the path"))
            }
            var bytes = Array(data)
            if !binary {
                while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                    bytes.removeLast()
                }
            }
            return .success(Secret(bytes: bytes, source: reference))
        }
        guard inline else { return .failure(Problem(message: " must be a reference: file:path or env:NAME")) }
        return .success(Secret(reference, source: "inline"))
    }
}
