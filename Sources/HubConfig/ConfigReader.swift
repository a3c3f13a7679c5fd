import Foundation
import HubCore
import Yams

/// Reads Yams nodes while collecting diagnostics with positions; never stops at the first problem.
struct ConfigReader {
    let file: String
    let baseDirectory: String
    let environment: [String: String]
    /// The transport plugins whose `transports.<id>` and `credentials.<id>` sections are read.
    var plugins: [any TransportPlugin] = []
    var diagnostics: [ConfigDiagnostic] = []
    /// The environment overrides applied to the document, to name them in diagnostics.
    var overrides: [EnvironmentOverrides.Applied] = []
    /// The bearer secrets read so far (admin token, publisher keys), so that one value used twice is refused.
    var bearerSecrets: [(secret: Secret, path: String, line: Int)] = []

    init(file: String, baseDirectory: String, environment: [String: String]) {
        self.file = file
        self.baseDirectory = baseDirectory
        self.environment = environment
    }

    mutating func error(_ node: Node?, _ message: String) {
        report(.error, at: node?.mark, message)
    }

    mutating func warning(_ node: Node?, _ message: String) {
        report(.warning, at: node?.mark, message)
    }

    /// Reports at a position of hub.yaml, or names the environment variable whose value it is in.
    mutating func report(
        _ severity: ConfigDiagnostic.Severity, at mark: Mark?, _ message: String, file: String? = nil
    ) {
        if let mark, let name = overrideName(line: mark.line) {
            diagnostics.append(
                ConfigDiagnostic(
                    file: "environment variable \(name)", line: 0, column: 0, severity: severity, message: message))
            return
        }
        diagnostics.append(
            ConfigDiagnostic(
                file: file ?? self.file, line: mark?.line ?? 0, column: mark?.column ?? 0, severity: severity,
                message: message))
    }

    /// The environment variable whose value holds `line` (override values sit past hub.yaml's end).
    func overrideName(line: Int) -> String? {
        overrides.first { $0.lines.contains(line) }?.name
    }

    /// A mapping's entries by key, reporting unknown keys (with a suggestion), duplicate keys,
    /// and missing required ones. `nil` (with an error) when the node is not a mapping.
    mutating func mapping(
        _ node: Node, at path: String, allowed: [String], required: [String] = []
    ) -> Entries? {
        guard case .mapping(let mapping) = node else {
            error(node, "'\(path)' must be a mapping of keys (\(allowed.joined(separator: ", ")))")
            return nil
        }
        var entries = Entries(node: node)
        for (keyNode, value) in mapping {
            guard let key = keyNode.scalar?.string else {
                error(keyNode, "keys under '\(path)' must be plain names")
                continue
            }
            if entries.values[key] != nil {
                error(keyNode, "'\(path).\(key)' is given twice; keep one")
                continue
            }
            if !allowed.contains(key) {
                var message = "unknown key '\(key)' in '\(path)'"
                if let suggestion = Suggestion.closest(to: key, in: allowed) {
                    message += "; did you mean '\(suggestion)'?"
                } else if allowed.isEmpty {
                    message += "; it takes no keys"
                } else {
                    message += "; allowed keys: \(allowed.joined(separator: ", "))"
                }
                error(keyNode, message)
                continue
            }
            entries.values[key] = value
            entries.keys[key] = keyNode
        }
        for key in required where entries.values[key] == nil {
            error(node, "'\(path)' is missing '\(key)'")
        }
        return entries
    }

    /// A scalar's text; reports a type error for sequences and mappings.
    mutating func string(_ node: Node?, at path: String) -> String? {
        guard let node else { return nil }
        guard case .scalar(let scalar) = node else {
            error(node, "'\(path)' must be a single value, not a \(node.kindName)")
            return nil
        }
        if scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
            error(node, "'\(path)' is empty; give a value")
            return nil
        }
        return scalar.string
    }

    mutating func integer(_ node: Node?, at path: String, in range: ClosedRange<Int>) -> Int? {
        guard let text = string(node, at: path) else { return nil }
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(value) else {
            error(node, "'\(path)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return value
    }

    /// A duration such as `30s`, `15m`, `12h`, `7d`, or a number of seconds.
    mutating func duration(_ node: Node?, at path: String) -> Duration? {
        guard let text = string(node, at: path) else { return nil }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let seconds = Int64(text), seconds >= 0 { return .seconds(seconds) }
        if let unit = text.last, let factor = units[unit], let count = Int64(text.dropLast()), count >= 0 {
            return .seconds(count * factor)
        }
        error(node, "'\(path)' must be a duration such as 30s, 15m, 12h or 7d")
        return nil
    }

    /// A duration within `range`; one outside it is an error that says `'<path>' must be <bounds>`.
    mutating func duration(
        _ node: Node?, at path: String, in range: ClosedRange<Duration>, mustBe bounds: String
    ) -> Duration? {
        guard let value = duration(node, at: path) else { return nil }
        guard range.contains(value) else {
            error(node, "'\(path)' must be \(bounds)")
            return nil
        }
        return value
    }

    /// Items of a sequence; reports a type error otherwise.
    mutating func sequence(_ node: Node?, at path: String) -> [Node]? {
        guard let node else { return nil }
        guard case .sequence(let sequence) = node else {
            error(node, "'\(path)' must be a list, not a \(node.kindName)")
            return nil
        }
        return Array(sequence)
    }

    /// One of `choices`, reported with the list otherwise.
    mutating func choice(_ node: Node?, at path: String, _ choices: [String]) -> String? {
        guard let text = string(node, at: path) else { return nil }
        guard choices.contains(text) else {
            var message = "'\(path)' must be one of \(choices.joined(separator: ", ")), not '\(text)'"
            if let suggestion = Suggestion.closest(to: text, in: choices) {
                message += "; did you mean '\(suggestion)'?"
            }
            error(node, message)
            return nil
        }
        return text
    }

    /// A path relative to hub.yaml's folder made absolute.
    func resolve(path: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: baseDirectory).appendingPathComponent(path).path
    }
}

/// The entries of one mapping, with the nodes of their keys for positions.
struct Entries {
    let node: Node
    var values: [String: Node] = [:]
    var keys: [String: Node] = [:]

    subscript(key: String) -> Node? { values[key] }
}

extension Node {
    var kindName: String {
        switch self {
        case .scalar: "single value"
        case .mapping: "mapping"
        case .sequence: "list"
        case .alias: "alias"
        }
    }
}
