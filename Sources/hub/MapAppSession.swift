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
    private let loader = ConfigLoader()

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

    /// Refuses an edit that adds errors to hub.yaml; errors the file had before are not ours to block on.
    func checkResult() throws {
        let before = Set(loader.load(text: original, path: path, baseDirectory: directory).errors.map(\.message))
        let after = loader.load(text: editor.text, path: path, baseDirectory: directory).errors
        let added = after.filter { !before.contains($0.message) }
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

    /// Signs with the credentials the request names, so mistakes show now and not at the first push.
    func checkCredentials(_ request: AppMappingRequest) async throws {
        var problems: [String] = []
        if let apns = request.apns, let reference = apns.privateKey {
            if let pem = readReference(reference, flag: "--apns-key", problems: &problems) {
                if let problem = CredentialCheck.p8Problem(pem) {
                    problems.append("--apns-key \(problem)")
                } else if let keyID = apns.keyID, let teamID = apns.teamID {
                    do {
                        _ = try await CredentialCheck.signAPNSToken(p8: pem, keyID: keyID, teamID: teamID)
                        print("APNs: the .p8 key signs an ES256 provider token for team \(teamID)")
                    } catch {
                        problems.append("--apns-key could not sign an ES256 token: \(error)")
                    }
                }
            }
        }
        if let reference = request.fcmServiceAccount,
            let json = readReference(reference, flag: "--fcm-service-account", problems: &problems)
        {
            switch FCMCredentials.parse(serviceAccount: Array(json.utf8), source: reference) {
            case .failure(let problem):
                problems.append("--fcm-service-account \(problem.message)")
            case .success(let account):
                do {
                    _ = try await CredentialCheck.signServiceAccountAssertion(account)
                    print("FCM: the service account \(account.clientEmail) signs an RS256 assertion")
                } catch {
                    problems.append("--fcm-service-account: its key could not sign an RS256 assertion: \(error)")
                }
            }
        }
        if !problems.isEmpty {
            for problem in problems { printError("error: \(problem)") }
            throw ExitCode(1)
        }
    }

    private func readReference(_ reference: String, flag: String, problems: inout [String]) -> String? {
        guard reference.hasPrefix("file:") else { return nil }
        let relative = String(reference.dropFirst(5))
        let full = relative.hasPrefix("/") ? relative : directory + "/" + relative
        guard let data = FileManager.default.contents(atPath: full) else {
            problems.append("\(flag): \(full) does not exist")
            return nil
        }
        return String(decoding: data, as: UTF8.self)
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
