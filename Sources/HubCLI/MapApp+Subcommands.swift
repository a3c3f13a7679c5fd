import ArgumentParser
import Foundation
import HubConfig
import HubCore

extension MapAppCommand {
    struct VerifyDomain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify-domain",
            abstract: "Fetch https://<domain>/.well-known/notification-hub.json and record the verification.")

        @OptionGroup var options: ConfigOption
        @Option(help: "The app's domain.") var app: String
        @Option(help: "PEM file of a CA to trust (for test servers).") var caFile: String?
        @Option(help: "HTTPS port of the domain (for test servers).") var port: Int = 443

        func run() async throws {
            let session = try MapAppSession(configPath: options.config)
            guard case .mapping(let entries)? = session.currentApp(app) else {
                printError("error: \(options.config) has no app '\(app)'; map it first with hub map-app --app \(app) …")
                throw ExitCode(1)
            }
            guard case .mapping(let domain)? = entries.first(where: { $0.key == "domain" })?.value,
                case .scalar(let token)? = domain.first(where: { $0.key == "verification" })?.value
            else {
                printError(
                    "error: '\(app)' has no domain.verification token; run hub map-app --app \(app) --domain-token to generate one"
                )
                throw ExitCode(1)
            }
            let verifier = DomainVerifier(caFile: caFile, port: port)
            do {
                let url = try await verifier.verify(domain: app, token: token)
                try session.setVerifiedAt(Date(), appID: app)
                try session.save()
                print("\(app): verified, \(url) serves the token")
            } catch let error as DomainVerificationError {
                printError("error: \(error.message)")
                throw ExitCode(1)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the mapped apps.")
        @OptionGroup var options: ConfigOption

        func run() async throws {
            let file = try options.loadOrExit()
            if file.apps.isEmpty { print("No apps; map one with hub map-app --app <domain> …") }
            for app in file.apps {
                let platforms = app.supportedPlatforms.map { "\($0) \(app.platforms[$0]?.count ?? 0)" }
                let providers = app.credentials.transports.map(\.rawValue)
                let domain =
                    app.domain?.verifiedAt.map { "verified \(ISO8601DateFormatter().string(from: $0))" } ?? "unverified"
                print(
                    "\(app.id)\t\(app.name)\t\(platforms.joined(separator: ", "))\tcredentials: \(providers.isEmpty ? "none" : providers.joined(separator: ", "))\tdomain \(domain)"
                )
            }
        }
    }

    struct RemoveID: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-id", abstract: "Remove platform app IDs from an app.")
        @OptionGroup var options: ConfigOption
        @Option(help: "The app's domain.") var app: String
        @Option(name: .customLong("ios")) var iosIDs: [String] = []
        @Option(name: .customLong("android")) var androidIDs: [String] = []
        @Option(name: .customLong("windows")) var windowsIDs: [String] = []
        @Option(name: .customLong("web")) var webIDs: [String] = []
        @Flag(help: "Print the change instead of writing it.") var dryRun = false

        func run() async throws {
            let session = try MapAppSession(configPath: options.config)
            guard session.index(of: app) != nil else {
                printError("error: \(options.config) has no app '\(app)'")
                throw ExitCode(1)
            }
            var request = AppMappingRequest(appID: app)
            request.removeIDs = [.ios: iosIDs, .android: androidIDs, .windows: windowsIDs, .web: webIDs]
                .filter { !$0.value.isEmpty }
            guard !request.removeIDs.isEmpty else {
                throw ValidationError("name the IDs to remove, e.g. --ios com.example.app")
            }
            guard try session.apply(request) else {
                print("nothing changed")
                return
            }
            if dryRun {
                print(HubFileWriter.diff(old: session.original, new: session.editedText, path: options.config))
                return
            }
            try session.save()
            print("\(options.config): removed from \(app)")
        }
    }
}
