import ArgumentParser
import Foundation
import HubConfig
import HubCore

/// One edit of hub.yaml by `hub map-app`: the original text, the edited text, and the checks
/// between them.
final class MapAppSession {
    let path: String
    let directory: String
    let original: String
    private var editor: YAMLDocumentEditor
    private let loader = ConfigLoader(applyEnvironment: false, plugins: HubCLI.plugins)  // the file as written

    init(configPath: String) throws {
        path = configPath
        directory = URL(fileURLWithPath: configPath).deletingLastPathComponent().path
        if let data = FileManager.default.contents(atPath: configPath) {
            original = String(decoding: data, as: UTF8.self)
        } else {
            original = "# NotificationHub configuration (created by hub map-app)\n"
        }
        do {
            editor = try YAMLDocumentEditor(text: original)
        } catch {
            throw ValidationError("\(configPath): \(error)")
        }
    }

    var editedText: String { editor.text }

    /// The index of the app under `apps:`, if it is there.
    func index(of appID: String) -> Int? {
        guard case .sequence(let apps)? = editor.value(at: [.key("apps")]) else { return nil }
        return apps.firstIndex { item in
            guard case .mapping(let entries) = item else { return false }
            return entries.contains { $0.key == "id" && $0.value == .scalar(appID) }
        }
    }

    func currentApp(_ appID: String) -> YAMLValue? {
        index(of: appID).flatMap { editor.value(at: [.key("apps"), .index($0)]) }
    }

    /// Applies the request to the edited text.
    /// - Returns: whether the text changed.
    /// - Throws: the mapping's problems, or the diagnostics the edit would add to hub.yaml.
    func apply(_ request: AppMappingRequest) throws -> Bool {
        let existing = currentApp(request.appID)
        let value: YAMLValue
        do {
            value = try AppMapper.apply(request, to: existing)
        } catch let error as AppMappingError {
            for problem in error.problems { printError("error: \(problem)") }
            throw ExitCode(1)
        }
        if let index = index(of: request.appID) {
            try editor.set(value, at: [.key("apps"), .index(index)])
        } else {
            try editor.append(value, toSequenceAt: [.key("apps")])
        }
        guard editor.text != original else { return false }
        try checkResult()
        return true
    }

    /// Refuses an edit that adds errors to hub.yaml; errors the file had before are not ours to block
    /// on, nor `env:` references to variables this shell does not set (they are set at deploy time).
    func checkResult() throws {
        let before = Set(loader.load(text: original, path: path, baseDirectory: directory).errors.map(\.message))
        let after = loader.load(text: editor.text, path: path, baseDirectory: directory).errors
        var added = after.filter { !before.contains($0.message) }
        // A variable that is not set here is set where the hub runs: the answer is kept, with a note.
        for diagnostic in added where SecretReference.isUnsetVariable(diagnostic.message) {
            var note = diagnostic
            note.severity = .warning
            printError("\(note.description) before hub serve (kept: it is set where the hub runs)")
        }
        added.removeAll { SecretReference.isUnsetVariable($0.message) }
        guard added.isEmpty else {
            for diagnostic in added { printError(diagnostic.description) }
            printError("\(path): not changed; fix the problems above")
            throw ExitCode(1)
        }
    }

    func save() throws {
        try HubFileWriter.write(editor.text, to: path)
    }

    func setVerifiedAt(_ date: Date, appID: String) throws {
        guard let index = index(of: appID) else { return }
        let stamp = ISO8601DateFormatter().string(from: date)
        try editor.set(.scalar(stamp), at: [.key("apps"), .index(index), .key("domain"), .key("verifiedAt")])
    }

    /// Checks the app's credentials in the edited file with their plugins (a key signs, a service
    /// account parses and signs; `online`, the providers accept them), so mistakes show now and not
    /// at the first push. Credentials whose `env:` variables this shell does not set are skipped
    /// with a note. Nothing is written when a check fails.
    func checkCredentials(appID: String, online: Bool = false) async throws {
        let plugins = HubCLI.plugins
        let result = ConfigLoader(plugins: plugins).load(text: editor.text, path: path, baseDirectory: directory)
        guard let file = result.file, let app = file.apps.first(where: { $0.id == appID }) else {
            if !app(appID, hasCredentialsIn: editor.text) { return }
            printError("note: the credentials were not checked: hub.yaml does not load with this environment")
            return
        }
        let checked = await CredentialChecks.run(app, in: file, plugins: plugins, online: online)
        for (id, summary) in checked.passed {
            print("\(id): the credentials (\(summary)) check out\(online ? " with the provider" : "")")
        }
        let problems = checked.problems
        if !problems.isEmpty {
            for problem in problems { printError("error: \(problem)") }
            printError("\(path): not changed; fix the credentials")
            throw ExitCode(1)
        }
    }

    private func app(_ appID: String, hasCredentialsIn text: String) -> Bool {
        guard case .mapping(let entries)? = currentApp(appID) else { return false }
        return entries.contains { $0.key == "credentials" }
    }

    static func newVerificationToken() -> String {
        "hub-verify=" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    func printDomainInstructions(appID: String) {
        guard case .mapping(let entries)? = currentApp(appID),
            case .mapping(let domain)? = entries.first(where: { $0.key == "domain" })?.value,
            case .scalar(let token)? = domain.first(where: { $0.key == "verification" })?.value,
            !domain.contains(where: { $0.key == "verifiedAt" })
        else { return }
        print(
            """

            Step 5, domain verification: serve this at \(DomainVerifier.wellKnownURL(domain: appID, port: 443)):
            \(DomainVerifier.documentBody(tokens: [token]))
            then run: hub map-app verify-domain --app \(appID) --config \(path)
            """)
    }
}

/// What `hub map-app` and `hub config check` verify of an app's credentials beyond reading them: each
/// plugin's ``TransportPlugin/checkCredentials(_:settings:online:)``.
enum CredentialChecks {
    /// - Returns: the transports whose credentials passed (with their summary), and the problems,
    ///   each prefixed with `credentials.<id>`.
    static func run(
        _ app: CrossDeviceApp, in file: HubFile, plugins: [any TransportPlugin], online: Bool
    ) async -> (passed: [(id: TransportID, summary: String)], problems: [String]) {
        var passed: [(id: TransportID, summary: String)] = []
        var problems: [String] = []
        for id in app.credentials.transports {
            guard let plugin = plugins.first(where: { $0.id == id }),
                let credentials = app.credentials[transport: id]
            else { continue }
            let found = await plugin.checkCredentials(
                credentials, settings: file.transports[id] ?? NoSettings(), online: online)
            if found.isEmpty { passed.append((id, credentials.summary)) }
            problems += found.map { "credentials.\(id): \($0)" }
        }
        return (passed, problems)
    }
}
