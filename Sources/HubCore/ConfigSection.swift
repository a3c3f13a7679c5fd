public import Foundation

/// One section of hub.yaml as a plugin reads it (`transports.apns`, `apps[0].credentials.fcm`),
/// collecting every problem as a ``ConfigDiagnostic`` at its file:line:column instead of stopping
/// at the first.
///
/// Readers return `nil` for a missing or wrong value (having reported the wrong one), so a plugin
/// reads every key and reports every problem at once:
///
/// ```swift
/// func readSettings(_ section: ConfigSection) -> (any Sendable)? {
///     guard section.expectKeys(["url", "timeout"]) else { return nil }
///     var settings = WebhookSettings()
///     if let url = section.url("url") { settings.url = url }
///     if let timeout = section.duration("timeout") { settings.timeout = timeout }
///     return settings
/// }
/// ```
public final class ConfigSection {
    /// The section's path in hub.yaml, such as `transports.apns`, for messages.
    public let path: String
    /// The section's value; `nil` when hub.yaml does not have it.
    public let node: ConfigNode?
    let context: Context

    /// What readers share: the diagnostics, and where secrets and files resolve.
    final class Context {
        let file: String
        let baseDirectory: String
        let environment: [String: String]
        var diagnostics: [ConfigDiagnostic] = []
        init(file: String, baseDirectory: String, environment: [String: String]) {
            self.file = file
            self.baseDirectory = baseDirectory
            self.environment = environment
        }
    }

    /// A section of a file.
    ///
    /// - Parameters:
    ///   - path: the section's path, such as `transports.apns`.
    ///   - node: its value, `nil` when absent.
    ///   - file: the file's name for diagnostics without a position.
    ///   - baseDirectory: where `file:` references and paths resolve.
    ///   - environment: where `env:` references resolve.
    public convenience init(
        path: String, node: ConfigNode?, file: String = "hub.yaml", baseDirectory: String = ".",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.init(
            path: path, node: node,
            context: Context(file: file, baseDirectory: baseDirectory, environment: environment))
    }

    init(path: String, node: ConfigNode?, context: Context) {
        self.path = path
        self.node = node
        self.context = context
    }

    /// Every problem reported so far, by this section and every section reached from it.
    public var diagnostics: [ConfigDiagnostic] { context.diagnostics }

    /// Whether an error has been reported.
    public var hasErrors: Bool { context.diagnostics.contains { $0.severity == .error } }

    /// Whether hub.yaml has this section.
    public var exists: Bool { node != nil }

    // MARK: Reporting

    /// Reports an error at `key`'s value (the key's own position when `atKey`), or at the
    /// section when `key` is `nil` or absent.
    public func error(_ message: String, at key: String? = nil, atKey: Bool = false) {
        report(.error, message, at: location(of: key, atKey: atKey))
    }

    /// Reports a warning, like ``error(_:at:atKey:)``.
    public func warning(_ message: String, at key: String? = nil, atKey: Bool = false) {
        report(.warning, message, at: location(of: key, atKey: atKey))
    }

    func report(_ severity: ConfigDiagnostic.Severity, _ message: String, at location: ConfigLocation?) {
        let location = location ?? ConfigLocation(file: context.file, line: 0, column: 0)
        context.diagnostics.append(
            ConfigDiagnostic(
                file: location.file, line: location.line, column: location.column, severity: severity,
                message: message))
    }

    // MARK: Structure

    /// The entries of the section's mapping.
    public var entries: [(key: String, keyLocation: ConfigLocation, value: ConfigNode)] {
        if case .mapping(let pairs) = node?.value { return pairs }
        return []
    }

    /// The value of `key`, when given.
    public func value(_ key: String) -> ConfigNode? { entries.first { $0.key == key }?.value }

    /// Whether `key` is given.
    public func has(_ key: String) -> Bool { value(key) != nil }

    /// The section under `key` (absent when not given), reporting into the same diagnostics.
    public func section(_ key: String) -> ConfigSection {
        ConfigSection(path: "\(path).\(key)", node: value(key), context: context)
    }

    /// Checks that the section is a mapping whose keys are among `allowed` (an unknown key is
    /// reported with the closest allowed one) and that every `required` key is given.
    /// An absent section passes when nothing is required.
    /// - Returns: `false` when the section is not a mapping (reported).
    @discardableResult
    public func expectKeys(_ allowed: [String], required: [String] = []) -> Bool {
        guard let node else {
            if !required.isEmpty { error("'\(path)' is missing; give \(required.joined(separator: ", "))") }
            return required.isEmpty
        }
        if case .scalar(_, isNull: true) = node.value, required.isEmpty { return true }
        guard case .mapping(let pairs) = node.value else {
            let keys = allowed.isEmpty ? "no keys" : "keys (\(allowed.joined(separator: ", ")))"
            report(.error, "'\(path)' must be a mapping of \(keys)", at: node.location)
            return false
        }
        var seen: Set<String> = []
        for pair in pairs {
            if !seen.insert(pair.key).inserted {
                report(.error, "'\(path).\(pair.key)' is given twice; keep one", at: pair.keyLocation)
            } else if !allowed.contains(pair.key) {
                var message = "unknown key '\(pair.key)' in '\(path)'"
                if let suggestion = Suggestion.closest(to: pair.key, in: allowed) {
                    message += "; did you mean '\(suggestion)'?"
                } else if allowed.isEmpty {
                    message += "; it takes no keys"
                } else {
                    message += "; allowed keys: \(allowed.joined(separator: ", "))"
                }
                report(.error, message, at: pair.keyLocation)
            }
        }
        for key in required where !seen.contains(key) {
            report(.error, "'\(path)' is missing '\(key)'", at: node.location)
        }
        return true
    }

    // MARK: Values

    /// A scalar's text; reports lists, mappings and empty values.
    public func string(_ key: String) -> String? {
        guard let node = value(key) else { return nil }
        switch node.value {
        case .scalar(_, isNull: true):
            report(.error, "'\(path).\(key)' is empty; give a value", at: node.location)
            return nil
        case .scalar(let text, _):
            return text
        default:
            report(.error, "'\(path).\(key)' must be a single value, not a \(node.kindName)", at: node.location)
            return nil
        }
    }

    /// A whole number in `range`.
    public func integer(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let text = string(key) else { return nil }
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(number) else {
            error("'\(path).\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound)", at: key)
            return nil
        }
        return number
    }

    /// `true` or `false`.
    public func bool(_ key: String) -> Bool? {
        guard let text = string(key) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            error("'\(path).\(key)' must be true or false, not '\(text)'", at: key)
            return nil
        }
    }

    /// A duration such as `500ms`, `30s`, `15m`, `12h`, `7d`, or a number of seconds.
    public func duration(_ key: String) -> Duration? {
        guard let text = string(key) else { return nil }
        if let duration = Self.parseDuration(text) { return duration }
        error("'\(path).\(key)' must be a duration such as 500ms, 30s, 15m, 12h or 7d", at: key)
        return nil
    }

    static func parseDuration(_ text: String) -> Duration? {
        if let seconds = Int64(text), seconds >= 0 { return .seconds(seconds) }
        if text.hasSuffix("ms"), let count = Int64(text.dropLast(2)), count >= 0 { return .milliseconds(count) }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last, let factor = units[unit], let count = Int64(text.dropLast()), count >= 0 {
            return .seconds(count * factor)
        }
        return nil
    }

    /// One of `choices`, reported with the list (and the closest choice) otherwise.
    public func choice(_ key: String, _ choices: [String]) -> String? {
        guard let text = string(key) else { return nil }
        guard choices.contains(text) else {
            var message = "'\(path).\(key)' must be one of \(choices.joined(separator: ", ")), not '\(text)'"
            if let suggestion = Suggestion.closest(to: text, in: choices) {
                message += "; did you mean '\(suggestion)'?"
            }
            error(message, at: key)
            return nil
        }
        return text
    }

    /// An absolute `http://` or `https://` URL (only `https` unless `allowHTTP`), without a
    /// trailing slash.
    public func url(_ key: String, allowHTTP: Bool = true) -> String? {
        guard let text = string(key) else { return nil }
        let schemes = allowHTTP ? ["https", "http"] : ["https"]
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), schemes.contains(scheme),
            url.host?.isEmpty == false
        else {
            error(
                "'\(path).\(key)' must be an absolute \(schemes.joined(separator: " or ")) URL, not '\(text)'", at: key)
            return nil
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// A `host:port` value (`[::1]:443` for IPv6).
    public func hostPort(_ key: String) -> (host: String, port: Int)? {
        guard let text = string(key) else { return nil }
        guard let colon = text.lastIndex(of: ":"), colon > text.startIndex,
            let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port)
        else {
            error("'\(path).\(key)' must be host:port, such as 127.0.0.1:2197", at: key)
            return nil
        }
        return (String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }

    /// A list of single values; a single value is read as a comma-separated list (the form an
    /// environment variable gives naturally).
    public func strings(_ key: String) -> [String]? {
        guard let node = value(key) else { return nil }
        switch node.value {
        case .scalar(let text, _):
            return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        case .sequence(let items):
            var result: [String] = []
            for item in items {
                guard case .scalar(let text, isNull: false) = item.value else {
                    report(.error, "'\(path).\(key)' must be a list of single values", at: item.location)
                    return nil
                }
                result.append(text)
            }
            return result
        case .mapping:
            report(.error, "'\(path).\(key)' must be a list, not a mapping", at: node.location)
            return nil
        }
    }

    /// A file path, made absolute relative to hub.yaml's folder; with `mustExist`, a missing
    /// file is reported.
    public func filePath(_ key: String, mustExist: Bool = true) -> String? {
        guard let text = string(key) else { return nil }
        let relative = text.hasPrefix("file:") ? String(text.dropFirst(5)) : text
        let full = resolve(path: relative)
        if mustExist && !FileManager.default.fileExists(atPath: full) {
            error("'\(path).\(key)' refers to \(full), which does not exist; create it or fix the path", at: key)
            return nil
        }
        return full
    }

    /// The text of the file at `key`'s path (relative to hub.yaml's folder), such as a PEM bundle of
    /// trust roots; a missing or unreadable file is reported.
    public func fileText(_ key: String) -> String? {
        guard let full = filePath(key) else { return nil }
        do {
            return try String(contentsOfFile: full, encoding: .utf8)
        } catch let failure {
            error("'\(path).\(key)' (\(full)) cannot be read: \(failure)", at: key)
            return nil
        }
    }

    /// A path relative to hub.yaml's folder made absolute.
    public func resolve(path: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: context.baseDirectory).appendingPathComponent(path).path
    }

    /// A secret reference: `env:NAME`, `file:path` (relative to hub.yaml), or an inline value
    /// (allowed with a warning, unless `inline` is false). A value given by an override variable
    /// comes from that variable. Diagnostics name the variable or path, never the secret.
    public func secret(_ key: String, inline: Bool = true, binary: Bool = false) -> Secret? {
        guard let reference = string(key), let node = value(key) else { return nil }
        if let variable = node.location.variable, !reference.hasPrefix("env:"), !reference.hasPrefix("file:") {
            return Secret(reference, source: "env:\(variable)")
        }
        switch SecretReference.resolve(
            reference, relativeTo: context.baseDirectory, environment: context.environment, binary: binary,
            inline: inline)
        {
        case .success(let secret):
            if secret.source == "inline" {
                warning(
                    "'\(path).\(key)' holds a secret inline; write env:NAME or file:path so hub.yaml can be shared safely",
                    at: key)
            }
            return secret
        case .failure(let problem):
            error("'\(path).\(key)'\(problem.message)", at: key)
            return nil
        }
    }

    private func location(of key: String?, atKey: Bool) -> ConfigLocation? {
        if let key, let pair = entries.first(where: { $0.key == key }) {
            return atKey ? pair.keyLocation : pair.value.location
        }
        return node?.location
    }
}
