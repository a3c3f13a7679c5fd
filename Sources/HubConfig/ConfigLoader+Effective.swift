import Foundation
import Yams

extension ConfigLoader {
    /// hub.yaml as the hub runs it: the file with the environment's overrides applied, secrets
    /// redacted (only `env:NAME` and `file:path` references are shown), for `hub config print`.
    public struct Effective: Sendable {
        /// The configuration as YAML.
        public var text: String
        /// Each override applied: the variable and the key it set.
        public var overrides: [(variable: String, key: String)]
    }

    /// Keys whose values are secrets (or hold one, as a database URL's password).
    static let secretKeys: Set<String> = [
        "adminToken", "cursorSecret", "url", "secret", "key", "privateKey", "certificate", "password",
        "serviceAccount", "clientSecret",
    ]

    /// The effective configuration of the file at `path`, or nil when it cannot be read or parsed.
    public func effective(path: String) -> Effective? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        var reader = ConfigReader(file: path, baseDirectory: "", environment: environment)
        guard var root = (try? Yams.compose(yaml: text)) ?? nil else { return nil }
        var applied: [EnvironmentOverrides.Applied] = []
        if applyEnvironment {
            let firstLine = text.split(separator: "\n", omittingEmptySubsequences: false).count + 2
            (root, applied) = EnvironmentOverrides.apply(
                to: root, environment: environment, firstLine: firstLine, plugins: plugins, reader: &reader)
        }
        let redacted = Self.redact(root, key: nil)
        guard let yaml = try? Yams.serialize(node: redacted) else { return nil }
        return Effective(text: yaml, overrides: applied.map { ($0.name, $0.path) })
    }

    static func redact(_ node: Node, key: String?) -> Node {
        switch node {
        case .scalar(let scalar):
            guard let key, secretKeys.contains(key) else { return node }
            let value = scalar.string
            if value.hasPrefix("env:") || value.hasPrefix("file:") || value.hasPrefix("https://") { return node }
            return .scalar(.init("<redacted>"))
        case .mapping(let mapping):
            return .mapping(
                .init(mapping.map { pair in (pair.key, redact(pair.value, key: pair.key.scalar?.string)) }))
        case .sequence(let sequence):
            return .sequence(.init(sequence.map { redact($0, key: key) }))
        case .alias:
            return node
        }
    }
}
