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
        // A secret given as the value of an override variable comes from that variable.
        if let line = node?.mark?.line, let name = overrideName(line: line), !reference.hasPrefix("env:"),
            !reference.hasPrefix("file:")
        {
            return Secret(reference, source: "env:\(name)")
        }
        switch SecretReference.resolve(
            reference, relativeTo: baseDirectory, environment: environment, binary: binary, inline: inline)
        {
        case .success(let secret):
            if secret.source == "inline" {
                warning(
                    node,
                    "'\(path)' holds a secret inline; write env:NAME or file:path so hub.yaml can be shared safely")
            }
            return secret
        case .failure(let problem):
            error(node, "'\(path)'\(problem.message)")
            return nil
        }
    }
}
