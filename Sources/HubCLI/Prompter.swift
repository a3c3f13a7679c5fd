import ArgumentParser
import Foundation
import HubConfig
import HubCore

/// Asks the onboarding steps one by one, re-asking until each answer is valid.
struct Prompter {
    let session: MapAppSession

    struct Cancelled: Error {}

    /// - Returns: the request, or `nil` when input ended.
    mutating func ask() async throws -> AppMappingRequest? {
        do {
            return try askSteps()
        } catch is Cancelled {
            print("\nCancelled; nothing written.")
            return nil
        }
    }

    private func askSteps() throws -> AppMappingRequest {
        print("Map a cross-device app into \(session.path). Press Ctrl-D to cancel.")
        let appID = try Self.prompt("App domain (e.g. notes.contoso.com)") { DomainName.problem($0) }
        var request = AppMappingRequest(appID: appID)
        let existing = session.currentApp(appID)
        if existing != nil { print("  \(appID) is already mapped: answers add to it.") }
        request.name = try Self.prompt("Display name", default: appID) { _ in nil }

        print("\nStep 1 of 5: platforms")
        let names = Platform.known.map(\.rawValue)
        let chosen = try Self.prompt("Platforms (comma-separated: \(names.joined(separator: ", ")))") { answer in
            let picked = Self.list(answer)
            if picked.isEmpty { return "name at least one platform" }
            let unknown = picked.filter { !names.contains($0) }
            return unknown.isEmpty
                ? nil : "unknown platform(s) \(unknown.joined(separator: ", ")); use \(names.joined(separator: ", "))"
        }
        let platforms = Self.list(chosen).map { Platform(rawValue: $0) }

        print("\nStep 2 of 5: app IDs (at most \(Platform.maxAppIDs) per platform)")
        for platform in platforms {
            var count = existingCount(existing, platform)
            var ids: [String] = []
            print("  \(platform) \(platform.appIDKind)s, one per line; an empty line ends:")
            while true {
                guard let line = readLine() else { throw Cancelled() }
                let id = line.trimmingCharacters(in: .whitespaces)
                if id.isEmpty {
                    if ids.isEmpty && count == 0 {
                        print("  ✗ give at least one \(platform.appIDKind)")
                        continue
                    }
                    break
                }
                if count >= Platform.maxAppIDs {
                    print("  ✗ '\(id)' not added: the limit of \(Platform.maxAppIDs) \(platform) app IDs is reached.")
                    break
                }
                if let problem = platform.problem(withAppID: id) {
                    print("  ✗ \(problem); try again")
                    continue
                }
                if !ids.contains(id) {
                    ids.append(id)
                    count += 1
                }
            }
            request.addIDs[platform] = ids
        }

        print("\nStep 3 of 5: identity (the app registration whose tokens sign users in)")
        let issuer = try Self.prompt("Token issuer URL (empty to skip)", default: "") { _ in nil }
        if !issuer.isEmpty {
            let audiences = try Self.prompt("Audiences (comma-separated client IDs)") {
                Self.list($0).isEmpty ? "give at least one audience" : nil
            }
            var keys = ""
            repeat {
                keys = try Self.prompt("Keys: file:jwks.json, https://…/keys, or secret:env:NAME for HS256") { answer in
                    answer.hasPrefix("file:") || answer.hasPrefix("https://") || answer.hasPrefix("secret:")
                        ? nil : "start with file:, https:// or secret:"
                }
            } while keys.hasPrefix("secret:") && !Self.keepIfUnset(String(keys.dropFirst(7)))
            request.identity = [
                keys.hasPrefix("secret:")
                    ? .init(issuer: issuer, audiences: Self.list(audiences), secret: String(keys.dropFirst(7)))
                    : .init(issuer: issuer, audiences: Self.list(audiences), jwks: keys)
            ]
        }

        print("\nStep 4 of 5: push credentials (empty answers skip a provider; devices can still poll)")
        let flags = TransportFlags(plugins: HubCLI.plugins)
        for (id, onboarding) in flags.transports {
            guard let plugin = HubCLI.plugins.first(where: { $0.id == id }),
                platforms.contains(where: { plugin.platforms.contains($0) })
            else { continue }
            try askCredentials(id, onboarding, flags: flags, appID: appID, into: &request)
        }
        let publisher = try Self.prompt("Publisher name for your app server (empty to skip)", default: "") { _ in nil }
        if !publisher.isEmpty {
            let key = try Self.reference("Publisher key reference (env:NAME or file:path)")
            request.publishers = [(publisher, key)]
        }
        print("\nStep 5 of 5: domain verification — a token is generated; instructions follow the save.")
        return request
    }

    /// Asks a transport's questions (its fields with a prompt, in order); an empty answer to the first
    /// skips the transport. Each answer is checked as typed, then the answers together, by the same
    /// rules as the flags.
    private func askCredentials(
        _ id: TransportID, _ onboarding: TransportOnboarding, flags: TransportFlags, appID: String,
        into request: inout AppMappingRequest
    ) throws {
        let asked = onboarding.fields.filter { $0.prompt != nil }
        while true {
            var values: [String: String] = [:]
            for (index, field) in asked.enumerated() {
                guard let answer = try ask(field, skippable: index == 0) else {
                    if index == 0 { return }
                    continue
                }
                values[field.name] = answer
            }
            let made = flags.credentials([id: values], appID: appID, directory: session.directory)
            if made.problems.isEmpty {
                request.credentialEntries += made.entries
                return
            }
            for problem in made.problems { print("  ✗ \(problem); try again") }
        }
    }

    /// One field's answer; `nil` when it was left empty and may be.
    private func ask(_ field: CredentialField, skippable: Bool) throws -> String? {
        let fallback = skippable ? "" : field.defaultAnswer
        while true {
            let answer = try Self.prompt(field.prompt ?? field.help, default: fallback) { answer in
                answer.isEmpty ? "give a value" : field.problem(answer)
            }
            if answer.isEmpty { return nil }
            if field.secret && field.input == .value && !Self.keepIfUnset(answer) { continue }
            return answer
        }
    }

    private func existingCount(_ app: YAMLValue?, _ platform: Platform) -> Int {
        guard case .mapping(let entries)? = app,
            case .mapping(let platforms)? = entries.first(where: { $0.key == "platforms" })?.value,
            case .mapping(let sub)? = platforms.first(where: { $0.key == platform.rawValue })?.value,
            case .sequence(let ids)? = sub.first(where: { $0.key == "appIds" })?.value
        else { return 0 }
        return ids.count
    }

    /// Asks for a secret reference (`env:NAME` or `file:path`). An `env:` variable that is not set in
    /// this shell is flagged at once, and the operator may keep it: it will be set where the hub runs.
    static func reference(_ question: String) throws -> String {
        while true {
            let answer = try prompt(question) {
                $0.hasPrefix("env:") || $0.hasPrefix("file:") ? nil : "write env:NAME or file:path"
            }
            if keepIfUnset(answer) { return answer }
        }
    }

    /// For `env:NAME` with NAME unset here, warns and asks whether to keep it (yes by default; an
    /// empty answer or end of input keeps it). - Returns: false when the operator wants to re-type it.
    static func keepIfUnset(
        _ reference: String, environment: [String: String] = ProcessInfo.processInfo.environment
    )
        -> Bool
    {
        guard reference.hasPrefix("env:") else { return true }
        let name = String(reference.dropFirst(4))
        guard environment[name]?.isEmpty ?? true else { return true }
        print("  ! \(name) is not set in this shell; the hub needs it when it starts.")
        print("    Keep env:\(name) (set it where the hub runs)? [Y/n]: ", terminator: "")
        fflush(nil)
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return !(answer == "n" || answer == "no")
    }

    static func list(_ answer: String) -> [String] {
        answer.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Asks until `check` accepts the answer (`nil` = fine). Throws ``Cancelled`` at end of input.
    static func prompt(
        _ question: String, default fallback: String? = nil, check: (String) -> String?
    ) throws
        -> String
    {
        while true {
            let suffix = fallback.map { $0.isEmpty ? "" : " [\($0)]" } ?? ""
            print("\(question)\(suffix): ", terminator: "")
            fflush(nil)
            guard let line = readLine() else { throw Cancelled() }
            var answer = line.trimmingCharacters(in: .whitespaces)
            if answer.isEmpty, let fallback { answer = fallback }
            if answer.isEmpty && fallback != nil { return answer }
            if let problem = check(answer) {
                print("  ✗ \(problem); try again")
                continue
            }
            return answer
        }
    }

    static func confirm(_ question: String) -> Bool {
        print("\(question) [y/N]: ", terminator: "")
        fflush(nil)
        guard let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return answer == "y" || answer == "yes"
    }
}
