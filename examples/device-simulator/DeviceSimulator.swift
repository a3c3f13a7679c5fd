import ArgumentParser
import Foundation
import HubClient

/// A device on the command line: signs in as a user, registers a polling endpoint, prints
/// notifications as they arrive, and reads `list`, `read <id>`, `dismiss <id>`, `quit` from stdin.
@main
struct DeviceSimulator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device-simulator",
        abstract: "Simulate one device of a user of a NotificationHub app (HubClient on the command line).",
        discussion: """
            Against the sample hub (swift run hub serve --config hub.yaml), from the repository root:

              swift run device-simulator --user alice --token-secret-file examples/dev/user-token.secret

            Run it twice with different --device names to see universal dismiss: dismiss on one,
            the other prints the change. Commands: list, read <id>, dismiss <id>, help, quit.
            """)

    @Option(help: "The hub's base URL.")
    var hub = "http://127.0.0.1:8080"

    @Option(help: "The cross-device app's ID (its domain).")
    var app = "notes.contoso.com"

    @Option(name: .customLong("app-id"), help: "The platform app ID to register (one of the app's).")
    var appID = "com.contoso.notes"

    @Option(help: "The platform to register as: ios, android, windows or web.")
    var platform = "ios"

    @Option(help: "The device's name; it also names the state file, so each name is one endpoint.")
    var device = "simulator"

    @Option(help: "The user to sign in as (the token's sub); needs --token-secret-file.")
    var user: String?

    @Option(name: .customLong("token-secret-file"), help: "The HS256 secret of the app's identity registration.")
    var tokenSecretFile: String?

    @Option(help: "The token issuer (iss) of the identity registration.")
    var issuer = "https://login.contoso.com"

    @Option(help: "The token audience (aud) of the identity registration.")
    var audience = "contoso-notes"

    @Option(help: "A user token to use instead of minting one (it cannot be refreshed).")
    var token: String?

    @Option(help: "The file that keeps the endpoint ID and feed position (default: .device-simulator/<device>.json).")
    var state: String?

    @Flag(help: "Follow the feed as server-sent events instead of long-polling.")
    var events = false

    func validate() throws {
        if token == nil && (user == nil || tokenSecretFile == nil) {
            throw ValidationError("Give --user and --token-secret-file to mint development tokens, or --token.")
        }
        guard URL(string: hub)?.host != nil else {
            throw ValidationError("--hub must be a URL such as http://127.0.0.1:8080")
        }
    }

    func run() async throws {
        var configuration = HubClient.Configuration()
        configuration.feedUpdates = events ? .serverSentEvents : .longPolling
        let stateFile = URL(fileURLWithPath: state ?? ".device-simulator/\(device).json")
        let client = HubClient(
            baseURL: URL(string: hub)!, app: app, storage: FileHubClientStorage(url: stateFile),
            configuration: configuration, tokenProvider: try tokenProvider())

        let endpoint = try await client.register(
            .polling(platform: Platform(rawValue: platform), appId: appID, appDisplayName: device))
        print("registered \(device) as endpoint \(endpoint.id) of \(app) (state in \(stateFile.path))")
        let reader = client.notificationChannel.createReader()
        let inbox = Inbox(reader: reader)
        try await inbox.list()
        print("commands: list, read <id>, dismiss <id>, help, quit")

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await change in reader.changes {
                    await inbox.received(change)
                }
                throw SimulatorError("the feed ended")
            }
            group.addTask {
                for await line in StandardInput.lines() {
                    guard try await inbox.perform(line) else { return }
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Mints a fresh development token on every request, or hands out `--token` once.
    private func tokenProvider() throws -> TokenProvider {
        if let token {
            return { reason in
                guard reason == .initial else { throw SimulatorError("the hub refused --token; pass a fresh one") }
                return token
            }
        }
        let minter = try DevelopmentToken(
            secretFile: tokenSecretFile ?? "", issuer: issuer, audience: audience, user: user ?? "")
        return { _ in try minter.signed() }
    }
}

/// Lines of standard input, read on a thread of their own so no task blocks on the terminal.
enum StandardInput {
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}
