import AsyncHTTPClient
import CustomTransportExample
import Foundation
import HubEmulators
import HubTesting
import HubTransportKit
import NIOCore
import NIOHTTP1
import Testing

/// The example as an operator runs it: its own `hub` (`webhook-hub`, HubCLI with the webhook
/// plugin added), the app onboarded with `map-app` and the flag the plugin declared, configured in
/// hub.yaml, started with `serve`, used over HTTP.
@Suite("webhook-hub: the webhook transport under its own hub serve", .timeLimit(.minutes(2)))
struct WebhookServeTests {
    static let userSecret = "webhook-example-user-secret-0123456789"
    static let publisherKey = "webhook-example-publisher-key-0123456789"

    @Test(
        "map-app onboards the app with the flag the plugin declared (--webhook-secret); serve runs it from hub.yaml; a publish reaches the receiver"
    )
    func serve() async throws {
        try await WebhookReceiver.run { receiver in
            let workspace = try Self.workspace(receiverURL: receiver.url, appCredentials: false)
            let environment = [
                // The app's own key signs its posts; the transport's is a different one, so a valid
                // signature at the receiver shows credentials.webhook was used.
                "WEBHOOK_SECRET": "transport-wide-secret-not-the-apps",
                "NOTES_WEBHOOK_SECRET": WebhookReceiver.secret.reveal(),
            ]
            // The plugin's onboarding declares `secret`: webhook-hub's map-app takes it as
            // --webhook-secret and writes credentials.webhook, which serve then signs with.
            let mapped = try await ServeProcess.run(
                [
                    "map-app", "--config", "hub.yaml", "--app", "notes.contoso.com", "--webhook-secret",
                    "env:NOTES_WEBHOOK_SECRET",
                ], in: workspace, environment)
            #expect(mapped.status == 0, "\(mapped.output)")
            let yaml = try String(contentsOf: workspace.appendingPathComponent("hub.yaml"), encoding: .utf8)
            #expect(yaml.contains("secret: env:NOTES_WEBHOOK_SECRET"), "\(yaml)")
            #expect(!yaml.contains(WebhookReceiver.secret.reveal()))
            let check = try await ServeProcess.run(
                ["config", "check", "--config", "hub.yaml"], in: workspace, environment)
            #expect(check.status == 0, "\(check.output)")
            #expect(check.output.contains("webhook: signing key from env:NOTES_WEBHOOK_SECRET"), "\(check.output)")
            #expect(!check.output.contains(WebhookReceiver.secret.reveal()))

            let hub = try await ServeProcess.start(in: workspace, environment: environment)
            defer { hub.signal(SIGKILL) }
            #expect(hub.log.contains("webhook transport enabled"), "\(hub.log)")
            let userToken = try await Self.userToken("alice")
            let registered = try await hub.request(
                .PUT, "/v1/apps/notes.contoso.com/me/endpoints/phone", bearer: userToken,
                json: #"{"platform":"ios","appId":"com.contoso.notes","transport":"webhook","token":"phone-1"}"#)
            #expect(registered.status == 200 || registered.status == 201, "\(registered.body)")
            let refused = try await hub.request(
                .PUT, "/v1/apps/notes.contoso.com/me/endpoints/tablet", bearer: userToken,
                json: #"{"platform":"ios","appId":"com.contoso.notes","transport":"webhook","token":"two words"}"#)
            #expect(refused.status == 400 && refused.body.contains("printable ASCII"), "\(refused.body)")
            let published = try await hub.request(
                .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: Self.publisherKey,
                json: #"{"appNotificationId":"n1","payload":{"rawContent":"hello"}}"#)
            #expect(published.status == 201, "\(published.body)")

            _ = await eventually { receiver.received.contains { $0.token == "phone-1" } }
            let post = try #require(receiver.received.first { $0.token == "phone-1" }, "\(hub.log)")
            #expect(post.signatureValid, "signed with the app's credentials.webhook secret")
            #expect(post.tap["app"] as? String == "notes.contoso.com" && post.tap["user"] as? String == "alice")
            #expect(post.tap["kind"] as? String == "shoulderTap")
            hub.signal(SIGTERM)
            #expect(await hub.waitForExit() == 0, "\(hub.log)")
        }
    }

    @Test("a wrong transports.webhook is reported at its line and column by config check")
    func configCheck() async throws {
        let workspace = try Self.workspace(receiverURL: URL(string: "http://127.0.0.1:9/hook")!)
        let yaml = try String(contentsOf: workspace.appendingPathComponent("hub.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "timeout: 5s", with: "timeout: soon")
        try yaml.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let check = try await ServeProcess.run(
            ["config", "check", "--config", "hub.yaml"], in: workspace,
            ["WEBHOOK_SECRET": "transport-wide-secret", "NOTES_WEBHOOK_SECRET": WebhookReceiver.secret.reveal()])
        let line = yaml.split(separator: "\n", omittingEmptySubsequences: false)[4]
        let column = try #require(line.range(of: "soon")).lowerBound.utf16Offset(in: line) + 1
        #expect(check.status == 1)
        #expect(
            check.output.contains(
                "hub.yaml:5:\(column): error: 'transports.webhook.timeout' must be a duration such as 500ms, 30s, 15m, 12h or 7d"
            ), "\(check.output)")
    }

    @Test(
        "map-app's --webhook-secret (declared by the plugin) writes credentials.webhook and has the plugin read them; what it refuses is not written"
    )
    func mapApp() async throws {
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-map-\(UUID())")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        let help = try await ServeProcess.run(["map-app", "--help"], in: workspace, [:])
        #expect(help.output.contains("--webhook-secret"), "\(help.output)")
        let base = ["map-app", "--config", "hub.yaml", "--app", "notes.contoso.com", "--ios", "com.contoso.notes"]
        let literal = try await ServeProcess.run(
            base + ["--webhook-secret", "hunter2-hunter2-hunter2"], in: workspace, [:])
        #expect(literal.status != 0, "\(literal.output)")
        #expect(literal.output.contains("--webhook-secret: is a secret: give a reference"), "\(literal.output)")
        #expect(!literal.output.contains("hunter2"), "a secret typed as a value is not echoed")
        let arguments = base + ["--webhook-secret", "env:NOTES_WEBHOOK_SECRET"]
        let short = try await ServeProcess.run(arguments, in: workspace, ["NOTES_WEBHOOK_SECRET": "too-short"])
        #expect(short.status == 1, "\(short.output)")
        #expect(
            short.output.contains(
                "'apps[0].credentials.webhook.secret' (env:NOTES_WEBHOOK_SECRET) is shorter than 16 bytes"),
            "\(short.output)")
        #expect(!FileManager.default.fileExists(atPath: workspace.appendingPathComponent("hub.yaml").path))

        let mapped = try await ServeProcess.run(
            arguments, in: workspace, ["NOTES_WEBHOOK_SECRET": WebhookReceiver.secret.reveal()])
        #expect(mapped.status == 0, "\(mapped.output)")
        #expect(
            mapped.output.contains("webhook: the credentials (signing key from env:NOTES_WEBHOOK_SECRET) check out"),
            "\(mapped.output)")
        let yaml = try String(contentsOf: workspace.appendingPathComponent("hub.yaml"), encoding: .utf8)
        #expect(yaml.contains("webhook:") && yaml.contains("secret: env:NOTES_WEBHOOK_SECRET"), "\(yaml)")
        #expect(!yaml.contains(WebhookReceiver.secret.reveal()))
    }

    /// A folder with hub.yaml (webhook to `receiverURL`), the user-token secret and the publisher key.
    /// - Parameter appCredentials: whether the app has `credentials.webhook` already (else
    ///   `map-app` is to add them).
    static func workspace(receiverURL: URL, appCredentials: Bool = true) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-hub-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try userSecret.write(to: directory.appendingPathComponent("user.secret"), atomically: true, encoding: .utf8)
        try publisherKey.write(
            to: directory.appendingPathComponent("publisher.key"), atomically: true, encoding: .utf8)
        let yaml = """
            server: { listen: "127.0.0.1:0" }
            store: { sqlite: { path: data/hub.sqlite } }
            transports:
              polling: {}
              webhook: { url: "\(receiverURL.absoluteString)", secret: env:WEBHOOK_SECRET, timeout: 5s }
            apps:
              - id: notes.contoso.com
                platforms: { ios: { appIds: [com.contoso.notes] } }
                identity:
                  - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                publishers: [ { name: backend, key: file:publisher.key } ]
            """
            + (appCredentials ? "\n    credentials:\n      webhook: { secret: env:NOTES_WEBHOOK_SECRET }" : "")
        try yaml.write(to: directory.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        return directory
    }

    static func userToken(_ user: String) async throws -> String {
        try await TestUserClaims(user: user, issuer: "https://login.contoso.com", audience: "contoso-notes")
            .signed(secret: userSecret)
    }
}

/// The built `webhook-hub` executable, run as a process.
enum ServeProcess {
    static let executable = ChildProcess.built("webhook-hub")

    /// Runs a command to its end. - Returns: its status and its standard output and error, together.
    static func run(
        _ arguments: [String], in directory: URL, _ environment: [String: String]
    ) async throws -> (
        status: Int32, output: String
    ) {
        let run = try await ChildProcess.run(executable, arguments, in: directory, environment: environment)
        return (run.status, run.stdout + run.stderr)
    }

    /// Starts `webhook-hub serve --config hub.yaml` in `directory` and waits until it listens.
    static func start(in directory: URL, environment: [String: String]) async throws -> ListeningProcess {
        try await ListeningProcess(
            executable, ["serve", "--config", "hub.yaml"], in: directory, environment: environment)
    }
}

extension ListeningProcess {
    func request(
        _ method: HTTPMethod, _ path: String, bearer: String, json: String
    ) async throws -> (
        status: Int, body: String
    ) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }
}
