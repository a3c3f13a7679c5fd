import Foundation
import HubCore
import Yams

extension ConfigReader {
    /// Resolves a secret reference: `env:NAME` (an environment variable), `file:path` (a file,
    /// relative to hub.yaml), or an inline value (allowed, with a warning, unless `inline` is false).
    /// A text file's final line break is dropped (`echo key > file` writes one); `binary` files
    /// (a .p12) are kept byte for byte. Diagnostics name the variable or path, never the secret.
    mutating func secret(_ node: Node?, at path: String, inline: Bool = true, binary: Bool = false) -> Secret? {
        guard let reference = string(node, at: path) else { return nil }
        if reference.hasPrefix("env:") {
            let name = String(reference.dropFirst(4))
            guard !name.isEmpty else {
                error(node, "'\(path)': write env:NAME with the name of an environment variable")
                return nil
            }
            guard let value = environment[name], !value.isEmpty else {
                error(node, "'\(path)' refers to the environment variable \(name), which is not set; export \(name)")
                return nil
            }
            return Secret(value, source: reference)
        }
        if reference.hasPrefix("file:") {
            let relative = String(reference.dropFirst(5))
            let full = resolve(path: relative)
            guard let data = FileManager.default.contents(atPath: full) else {
                let exists = FileManager.default.fileExists(atPath: full)
                error(
                    node,
                    exists
                        ? "'\(path)' refers to \(full), which cannot be read; check its permissions"
                        : "'\(path)' refers to \(full), which does not exist; create it or fix the path")
                return nil
            }
            var bytes = Array(data)
            if !binary {
                while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                    bytes.removeLast()
                }
            }
            return Secret(bytes: bytes, source: reference)
        }
        if !inline {
            error(node, "'\(path)' must be a reference: file:path or env:NAME")
            return nil
        }
        warning(node, "'\(path)' holds a secret inline; write env:NAME or file:path so hub.yaml can be shared safely")
        return Secret(reference, source: "inline")
    }
}
