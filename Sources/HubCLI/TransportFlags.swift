import ArgumentParser
import Foundation
import HubCore

/// The `--<id>-<field>` flags of `hub map-app`, as the plugins' onboarding declares them
/// (``TransportOnboarding``): ArgumentParser cannot add options at run time, so `map-app` collects
/// the arguments it does not know and this matches them against the plugins' fields.
struct TransportFlags {
    /// One declared flag.
    struct Declared {
        let transport: TransportID
        let onboarding: TransportOnboarding
        let field: CredentialField
        var flag: String { "--\(transport.rawValue)-\(field.name)" }
    }

    let declared: [Declared]

    init(plugins: [any TransportPlugin]) {
        declared = plugins.flatMap { plugin in
            plugin.onboarding.map { onboarding in
                onboarding.fields.map { Declared(transport: plugin.id, onboarding: onboarding, field: $0) }
            } ?? []
        }
    }

    /// The transports with onboarding, in the plugins' order.
    var transports: [(id: TransportID, onboarding: TransportOnboarding)] {
        var seen: [TransportID] = []
        return declared.compactMap { entry in
            guard !seen.contains(entry.transport) else { return nil }
            seen.append(entry.transport)
            return (entry.transport, entry.onboarding)
        }
    }

    /// Reads `--flag value` and `--flag=value` arguments (a repeated flag: the last value).
    /// - Parameters:
    ///   - arguments: what ArgumentParser did not recognize, in order.
    ///   - known: the command's own flags, for the suggestion of an unknown one.
    /// - Returns: the values by transport and field name.
    /// - Throws: `ValidationError` for an unknown flag (naming the nearest known one), a stray argument
    ///   or a missing value.
    func parse(_ arguments: [String], known: [String]) throws -> [TransportID: [String: String]] {
        var values: [TransportID: [String: String]] = [:]
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--") else { throw ValidationError("unexpected argument '\(argument)'") }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            guard let entry = declared.first(where: { $0.flag == name }) else {
                let all = known + declared.map(\.flag)
                let nearest = Self.nearest(to: name, in: all).map { "; did you mean '\($0)'?" } ?? ""
                throw ValidationError("unknown option '\(name)'\(nearest)")
            }
            if value == nil, let next = rest.first, !next.hasPrefix("--") {
                value = next
                rest = rest.dropFirst()
            }
            guard let value else { throw ValidationError("\(name) needs a value: \(entry.field.help)") }
            values[entry.transport, default: [:]][entry.field.name] = value
        }
        return values
    }

    /// Checks each value with its field, then asks each transport's onboarding for its
    /// `credentials.<id>` entries (only when every value passed, so that nothing is generated for a
    /// command that fails).
    /// - Returns: the entries by transport, and the problems (each naming its flag).
    func credentials(
        _ values: [TransportID: [String: String]], appID: String, directory: String
    ) -> (entries: [(transport: String, entries: [(key: String, value: String)])], problems: [String]) {
        var problems: [String] = []
        var answers: [CredentialAnswers] = []
        for (id, onboarding) in transports {
            guard let given = values[id], !given.isEmpty else { continue }
            var converted: [String: String] = [:]
            for field in onboarding.fields {
                guard let value = given[field.name] else { continue }
                if let problem = field.problem(value) {
                    problems.append("--\(id.rawValue)-\(field.name): \(problem)")
                    continue
                }
                converted[field.name] =
                    field.input == .file ? FlagPath.reference(value, base: directory) : value
            }
            answers.append(
                CredentialAnswers(transport: id, appID: appID, directory: directory, values: converted))
        }
        guard problems.isEmpty else { return ([], problems) }
        var entries: [(transport: String, entries: [(key: String, value: String)])] = []
        for answer in answers {
            guard let onboarding = transports.first(where: { $0.id == answer.transport })?.onboarding else { continue }
            do {
                entries.append((answer.transport.rawValue, try onboarding.credentials(answer)))
            } catch let error as CredentialProblems {
                problems += error.problems
            } catch {
                problems.append("\(answer.transport): \(error)")
            }
        }
        return (entries, problems)
    }

    /// The flags for `hub map-app --help`, one per field, grouped by transport.
    var help: String {
        guard !declared.isEmpty else { return "" }
        var lines = ["TRANSPORT CREDENTIALS (declared by this hub's transport plugins):"]
        for entry in declared {
            let placeholder =
                entry.field.input == .file ? "<file>" : entry.field.secret ? "<env:NAME|file:path>" : "<value>"
            let name = "  \(entry.flag) \(placeholder)"
            if name.count < 40 {
                lines.append(name.padding(toLength: 40, withPad: " ", startingAt: 0) + entry.field.help)
            } else {
                lines.append(name)
                lines.append(String(repeating: " ", count: 40) + entry.field.help)
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The candidate closest to `name` by edit distance, if one is close enough to be a typo.
    static func nearest(to name: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(name, $0)) }.min { $0.1 < $1.1 }
        guard let (best, score) = scored, score <= max(2, name.count / 3) else { return nil }
        return best
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
