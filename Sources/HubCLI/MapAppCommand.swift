import ArgumentParser
import Foundation
import HubConfig
import HubCore
import HubWNS

struct MapAppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "map-app",
        abstract:
            "Map a cross-device app in hub.yaml, step by step: platforms, app IDs, identity, credentials, domain.",
        discussion: """
            `hub map-app [--app …] [flags]` runs the `map` step: without --app on a terminal (or with --interactive) \
            it asks one question per step; with flags it creates or updates one app and leaves the rest of hub.yaml \
            as it was. The same flags twice change nothing. Its flags:

            """ + MapAppCommand.mapFlags,
        subcommands: [Map.self, VerifyDomain.self, List.self, RemoveID.self],
        defaultSubcommand: Map.self
    )
}

extension MapAppCommand {
    /// The options of `map`, the default subcommand, for `hub map-app --help` (ArgumentParser shows a
    /// default subcommand's flags only under `hub map-app map --help`).
    static var mapFlags: String {
        let help = Map.helpMessage(columns: 78)
        guard let start = help.range(of: "OPTIONS:") else { return help }
        return String(help[start.upperBound...]).trimmingCharacters(in: .newlines)
    }

    struct Map: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or update one app (the default of map-app).")

        @OptionGroup var options: ConfigOption
        @Option(help: "The app's domain, such as notes.contoso.com.") var app: String?
        @Option(help: "Display name.") var name: String?
        @Option(name: .customLong("ios"), help: "iOS bundle ID (repeatable, at most 10).") var iosIDs: [String] = []
        @Option(name: .customLong("android"), help: "Android package name (repeatable).") var androidIDs: [String] = []
        @Option(name: .customLong("windows"), help: "Windows package family name (repeatable).") var windowsIDs:
            [String] = []
        @Option(name: .customLong("web"), help: "Web origin (repeatable).") var webIDs: [String] = []
        @Option(help: "Identity registration: token issuer.") var issuer: String?
        @Option(name: .customLong("audience"), help: "Identity registration: audience (repeatable).") var audiences:
            [String] = []
        @Option(help: "Identity registration: JWKS, file:path or https:// URL.") var jwks: String?
        @Option(help: "Identity registration: HS256 secret reference (env:NAME or file:path).") var identitySecret:
            String?
        @Option(help: "APNs .p8 token key file.") var apnsKey: String?
        @Option(help: "APNs key ID (10 characters).") var apnsKeyId: String?
        @Option(help: "APNs team ID (10 characters).") var apnsTeamId: String?
        @Option(help: "APNs .p12 certificate file (instead of a .p8 key).") var apnsCertificate: String?
        @Option(help: "Password of the .p12, as env:NAME or file:path.") var apnsPassword: String?
        @Option(help: "APNs environment: production or development.") var apnsEnvironment: String?
        @Option(help: "FCM service-account JSON file.") var fcmServiceAccount: String?
        @Option(help: "WNS package SID (ms-app://s-1-15-2-…).") var wnsSid: String?
        @Option(help: "WNS client secret, as env:NAME or file:path.") var wnsSecret: String?
        @Option(help: "WNS Entra ID tenant.") var wnsTenant: String?
        @Option(help: "WNS Entra ID client ID.") var wnsClientId: String?
        @Option(
            help: ArgumentHelp(
                "Credentials of any transport plugin of this hub, as ID='{key: value, …}' (repeatable).",
                discussion: """
                    Written under the app's credentials.<ID> and read by that plugin, e.g. \
                    --credentials webhook='{secret: env:NOTES_WEBHOOK_SECRET}'.
                    """)) var credentials: [String] = []
        @Option(help: "Web Push VAPID contact: a mailto: or https: URL. Writes credentials.webpush.")
        var webpushSubject: String?
        @Option(help: "Web Push VAPID private key file (PEM); generated (mode 0600) when it does not exist.")
        var webpushKey: String?
        @Option(help: "Publisher as NAME=env:VAR or NAME=file:path (repeatable).") var publisher: [String] = []
        @Option(help: "shoulderTap or visible.") var deliveryMode: String?
        @Flag(help: "Print the change instead of writing it.") var dryRun = false
        @Flag(
            help: ArgumentHelp(
                "Also check the FCM and WNS credentials with the providers.",
                discussion: """
                    Each transport plugin checks its credentials; FCM: a validate_only send to a topic (nothing \
                    is delivered); WNS: an access-token request. The checks use hub.yaml's transports.<id> \
                    settings, so HUB_TRANSPORTS_FCM_SEND_URL, … point them at emulators (hub emulate fcm|wns).
                    """)) var checkOnline = false
        @Flag(help: "Ask for each step even when standard input is not a terminal.") var interactive = false
        @Flag(help: "Generate a domain verification token for an existing app that has none.") var domainToken = false

        func run() async throws {
            let session = try MapAppSession(configPath: options.config)
            var request: AppMappingRequest
            if interactive || (app == nil && isatty(STDIN_FILENO) == 1) {
                var prompter = Prompter(session: session)
                guard let asked = try await prompter.ask() else { return }
                request = asked
            } else {
                guard let app else { throw ValidationError("give --app <domain>, or run on a terminal to be asked") }
                request = try flagRequest(app: app, base: session.directory)
            }
            if session.currentApp(request.appID) == nil || domainToken {
                request.verificationToken = MapAppSession.newVerificationToken()
            }
            let changed = try session.apply(request)
            guard changed else {
                print("\(options.config): \(request.appID) is already mapped this way; nothing changed")
                return
            }
            try await session.checkCredentials(appID: request.appID, online: checkOnline)
            if dryRun {
                print(HubFileWriter.diff(old: session.original, new: session.editedText, path: options.config))
                return
            }
            if interactive || (app == nil && isatty(STDIN_FILENO) == 1) {
                print(HubFileWriter.diff(old: session.original, new: session.editedText, path: options.config))
                guard Prompter.confirm("Save to \(options.config)?") else {
                    print("Not saved.")
                    return
                }
            }
            try session.save()
            print("\(options.config): mapped \(request.appID)")
            session.printDomainInstructions(appID: request.appID)
        }

        func flagRequest(app: String, base: String) throws -> AppMappingRequest {
            var request = AppMappingRequest(appID: app)
            request.name = name
            request.addIDs = [.ios: iosIDs, .android: androidIDs, .windows: windowsIDs, .web: webIDs].filter {
                !$0.value.isEmpty
            }
            if let issuer {
                request.identity = [
                    .init(
                        issuer: issuer, audiences: audiences,
                        jwks: jwks.map { FlagPath.reference($0, base: base, allowURL: true) }, secret: identitySecret)
                ]
            } else if !audiences.isEmpty || jwks != nil || identitySecret != nil {
                throw ValidationError("--audience, --jwks and --identity-secret need --issuer")
            }
            if apnsKey != nil || apnsCertificate != nil || apnsKeyId != nil || apnsTeamId != nil {
                var apns = AppMappingRequest.APNS()
                apns.privateKey = apnsKey.map { FlagPath.reference($0, base: base) }
                apns.certificate = apnsCertificate.map { FlagPath.reference($0, base: base) }
                apns.password = apnsPassword
                apns.keyID = apnsKeyId
                apns.teamID = apnsTeamId
                apns.environment = apnsEnvironment
                if apns.privateKey == nil && apns.certificate == nil {
                    throw ValidationError("--apns-key-id and --apns-team-id go with --apns-key <AuthKey.p8>")
                }
                request.apns = apns
            }
            for entry in credentials {
                guard let equals = entry.firstIndex(of: "="), equals > entry.startIndex else {
                    throw ValidationError("--credentials takes ID='{key: value}', not '\(entry)'")
                }
                request.credentials.append(
                    (String(entry[..<equals]), String(entry[entry.index(after: equals)...])))
            }
            request.fcmServiceAccount = fcmServiceAccount.map { FlagPath.reference($0, base: base) }
            if wnsSid != nil || wnsTenant != nil || wnsClientId != nil || wnsSecret != nil {
                var wns = AppMappingRequest.WNS()
                wns.packageSID = wnsSid
                if let sid = wnsSid, let problem = WNSCredentials.packageSIDProblem(sid) {
                    request.flagProblems.append("--wns-sid: \(problem)")
                }
                wns.clientSecret = wnsSecret
                wns.tenantID = wnsTenant
                wns.clientID = wnsClientId
                request.wns = wns
            }
            if let webpush = try webpushCredentials(app: app, base: base) { request.credentials.append(webpush) }
            for entry in publisher {
                guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                    throw ValidationError("--publisher takes NAME=env:VAR or NAME=file:path, not '\(entry)'")
                }
                request.publishers.append((String(entry[..<equals]), String(entry[entry.index(after: equals)...])))
            }
            request.deliveryMode = deliveryMode
            return request
        }
    }
}

/// Turns a path given on the command line into a hub.yaml reference relative to hub.yaml's folder.
enum FlagPath {
    static func reference(_ value: String, base: String, allowURL: Bool = false) -> String {
        if value.hasPrefix("env:") || value.hasPrefix("file:") || (allowURL && value.hasPrefix("https://")) {
            return value
        }
        let absolute = value.hasPrefix("/") ? value : FileManager.default.currentDirectoryPath + "/" + value
        let standardized = URL(fileURLWithPath: absolute).standardizedFileURL.path
        let baseDirectory = URL(fileURLWithPath: base).standardizedFileURL.path
        if standardized.hasPrefix(baseDirectory + "/") {
            return "file:" + standardized.dropFirst(baseDirectory.count + 1)
        }
        return "file:" + standardized
    }
}
