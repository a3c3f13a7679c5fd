import ArgumentParser
import Foundation
import HubConfig
import HubCore

struct MapAppCommand: AsyncParsableCommand {
    // Computed: the transport flags come from the plugins of the running command.
    static var configuration: CommandConfiguration {
        CommandConfiguration(
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
}

extension MapAppCommand {
    /// The options of `map`, the default subcommand, for `hub map-app --help` (ArgumentParser shows a
    /// default subcommand's flags only under `hub map-app map --help`).
    static var mapFlags: String {
        let help = Map.helpMessage(columns: 78)
        let transports = TransportFlags(plugins: HubCLI.plugins).help
        guard let start = help.range(of: "OPTIONS:") else { return help }
        return String(help[start.upperBound...]).trimmingCharacters(in: .newlines)
            + (transports.isEmpty ? "" : "\n\n" + transports)
    }

    /// The options of `map` itself, such as `--app` and `--dry-run` (not the plugins' flags, which
    /// its help lists too): a plugin's flag must not be one of them (``PluginConflicts``).
    static var ownOptions: Set<String> {
        let help = Map.helpMessage(columns: 200)
        guard let start = help.range(of: "OPTIONS:") else { return [] }
        return Set(
            help[start.upperBound...].split(whereSeparator: { !($0.isLetter || $0 == "-") })
                .filter { $0.hasPrefix("--") }.map(String.init))
    }

    struct Map: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(
                abstract: "Create or update one app (the default of map-app).",
                discussion: TransportFlags(plugins: HubCLI.plugins).help)
        }

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
        @Option(
            help: ArgumentHelp(
                "Credentials of any transport plugin of this hub, as ID='{key: value, …}' (repeatable).",
                discussion: """
                    Written under the app's credentials.<ID> and read by that plugin, e.g. \
                    --credentials webhook='{secret: env:NOTES_WEBHOOK_SECRET}'.
                    """)) var credentials: [String] = []
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
        /// The `--<transport>-<field>` flags of the plugins (``TransportFlags``), which ArgumentParser
        /// cannot declare at run time.
        @Argument(parsing: .allUnrecognized, help: .hidden) var transportFlags: [String] = []

        func run() async throws {
            let flags = TransportFlags(plugins: HubCLI.plugins)
            let own = Self.helpMessage(columns: 200).split(whereSeparator: { !($0.isLetter || $0 == "-") })
                .filter { $0.hasPrefix("--") }.map(String.init)
            let transportValues = try flags.parse(transportFlags, known: own)
            let session = try MapAppSession(configPath: options.config)
            var request: AppMappingRequest
            if interactive || (app == nil && isatty(STDIN_FILENO) == 1) {
                var prompter = Prompter(session: session)
                guard let asked = try await prompter.ask() else { return }
                request = asked
            } else {
                guard let app else { throw ValidationError("give --app <domain>, or run on a terminal to be asked") }
                request = try flagRequest(app: app, base: session.directory)
                let made = flags.credentials(transportValues, appID: app, directory: session.directory)
                request.credentialEntries = made.entries
                request.flagProblems += made.problems
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
            for entry in credentials {
                guard let equals = entry.firstIndex(of: "="), equals > entry.startIndex else {
                    throw ValidationError("--credentials takes ID='{key: value}', not '\(entry)'")
                }
                request.credentials.append(
                    (String(entry[..<equals]), String(entry[entry.index(after: equals)...])))
            }
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
        return CredentialAnswers.fileReference(value, directory: base)
    }
}
