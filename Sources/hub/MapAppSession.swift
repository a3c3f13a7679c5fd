import ArgumentParser
import Foundation
import HubConfig
import HubCore
import HubFCM
import HubWNS

/// One edit of hub.yaml by `hub map-app`: the original text, the edited text, and the checks
/// between them.
final class MapAppSession {
    let path: String
    let directory: String
    let original: String
    private var editor: YAMLDocumentEditor
    private let loader = ConfigLoader(applyEnvironment: false)  // the file as written

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

    /// Signs with the credentials the request names, so mistakes show now and not at the first push;
    /// `online`, also asks FCM and WNS whether they accept them.
    func checkCredentials(_ request: AppMappingRequest, online: Bool = false) async throws {
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
                    if online { try await checkFCMOnline(account, problems: &problems) }
                } catch {
                    problems.append("--fcm-service-account: its key could not sign an RS256 assertion: \(error)")
                }
            }
        }
        if online, let wns = request.wns, let credentials = wnsCredentials(wns, problems: &problems) {
            await checkWNSOnline(credentials, problems: &problems)
        }
        if !problems.isEmpty {
            for problem in problems { printError("error: \(problem)") }
            throw ExitCode(1)
        }
    }

    /// A validate_only send with the service account: FCM checks the key, the project and the
    /// permission to send, and delivers nothing.
    private func checkFCMOnline(_ account: FCMCredentials, problems: inout [String]) async throws {
        let client = try FCMClient(configuration: try Transports.fcmConfiguration())
        do {
            try await client.validate(credentials: account)
            print("FCM: project \(account.projectID) accepts a validate_only message from \(account.clientEmail)")
        } catch {
            problems.append("--fcm-service-account: FCM refused it: \(error.message)")
        }
        try? await client.shutdown()
    }

    /// An access-token request with the WNS credentials.
    private func checkWNSOnline(_ credentials: WNSCredentials, problems: inout [String]) async {
        do {
            let client = try WNSClient(configuration: try Transports.wnsConfiguration())
            do {
                try await client.validate(credentials: credentials)
                print("WNS: the token service issues an access token for these credentials")
            } catch {
                problems.append("--wns-secret: WNS refused the credentials: \(error.message)")
            }
            try? await client.shutdown()
        } catch {
            problems.append("WNS could not be checked: \(error)")
        }
    }

    /// The WNS credentials of the request, with the secret read from its reference (resolved as
    /// hub.yaml's are).
    private func wnsCredentials(_ wns: AppMappingRequest.WNS, problems: inout [String]) -> WNSCredentials? {
        guard let reference = wns.clientSecret else { return nil }
        let secret: Secret
        switch SecretReference.resolve(reference, relativeTo: directory, inline: false) {
        case .success(let resolved): secret = resolved
        case .failure(let problem):
            problems.append("--wns-secret\(problem.message)")
            return nil
        }
        if let sid = wns.packageSID {
            return WNSCredentials(authentication: .packageSID(sid: sid, secret: secret))
        }
        guard let tenant = wns.tenantID, let client = wns.clientID else { return nil }
        return WNSCredentials(authentication: .entra(tenantID: tenant, clientID: client, clientSecret: secret))
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
