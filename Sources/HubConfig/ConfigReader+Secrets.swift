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

    /// A bearer secret (the admin token, a publisher key): resolved as ``secret(_:at:inline:binary:)``,
    /// then refused when it is weaker than ``SecretStrength`` asks or when another bearer secret
    /// of this file has the same value (a key names one publisher of one app; the admin token is
    /// no publisher's). Diagnostics name the places, never the value.
    mutating func bearerSecret(_ node: Node?, at path: String) -> Secret? {
        guard let value = secret(node, at: path) else { return nil }
        if let problem = SecretStrength.bearerProblem(value) {
            error(node, "'\(path)' \(problem); use a long random value (openssl rand -hex 32)")
            return value
        }
        if let first = bearerSecrets.first(where: { $0.secret.revealBytes() == value.revealBytes() }) {
            let place = overrideName(line: first.line).map { "from \($0)" } ?? "line \(first.line)"
            error(
                node,
                "'\(path)' has the same value as '\(first.path)' (\(place)); give each publisher of each app and the admin token a value of its own"
            )
        }
        bearerSecrets.append((value, path, node?.mark?.line ?? 0))
        return value
    }
}
