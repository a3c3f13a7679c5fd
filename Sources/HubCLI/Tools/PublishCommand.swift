import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubConfig
import HubCore
import NIOCore

/// `hub publish`: one notification for one user, or for every user of a file in batches, through a
/// running hub's publisher API.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a notification for a user, or for many, through a running hub.",
        discussion: """
            Uses the app's first publisher key in hub.yaml (or --publisher's, or --key) and the hub at \
            --url (default: server.listen of hub.yaml). With --user: one publish (POST \
            …/users/{user}/notifications); prints the stored notification, exits 1 with the hub's problem \
            when it refuses. With --users-file FILE (one user ID a line; empty lines skipped): the same \
            notification for every user, sent in batches of up to --batch-size (POST …/notifications/batch), \
            with a progress bar on a terminal; every user gets the same appNotificationId, so running the \
            command again with the --id it printed updates instead of duplicating. Prints a summary; exits 1 \
            when any user was refused (each named by its line on stderr).
            """)

    @OptionGroup var options: ConfigOption
    @Option(help: "The app's ID (its domain).") var app: String
    @Option(help: "The user to notify.") var user: String?
    @Option(help: "A file of user IDs, one a line, to notify in batches (instead of --user).") var usersFile: String?
    @Option(help: "Users per batch request with --users-file, 1 to 1000.") var batchSize = 1000
    @Option(help: "Visible title.") var title: String?
    @Option(help: "Visible body.") var body: String?
    @Option(help: "rawContent for the app (a string, often JSON).") var raw: String?
    @Option(help: "appNotificationId (the same one again updates it); default: a new one.") var id: String?
    @Option(help: "Priority: none, low or high.") var priority: String?
    @Option(help: "The hub's base URL; default: from server.listen in hub.yaml.") var url: String?
    @Option(help: "Publisher key as env:NAME or file:path (or the key itself); default: from hub.yaml.") var key:
        String?
    @Option(help: "Which publisher of the app in hub.yaml, by name; default: the first.") var publisher: String?

    func validate() throws {
        guard title != nil || body != nil || raw != nil else {
            throw ValidationError("give --title and/or --body (a visible notification), or --raw")
        }
        guard (user == nil) != (usersFile == nil) else {
            throw ValidationError("give --user (one user) or --users-file (many), not both")
        }
        guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be from 1 to 1000") }
    }

    func run() async throws {
        let (base, publisherKey) = try resolveTarget()
        let object = publishBody(id: id ?? "cli-\(UUID().uuidString.lowercased())")
        guard let user else {
            try await publishToUsersFile(object, base: base, key: publisherKey)
            return
        }
        let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        let path = "/v1/apps/\(Self.escape(app))/users/\(Self.escape(user))/notifications"
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(publisherKey.reveal())")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: json))
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        } catch {
            printError("\(base) could not be reached: \(error); is `hub serve` running there?")
            throw ExitCode(1)
        }
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard (200..<300).contains(response.status.code) else {
            printError("the hub answered \(response.status.code): \(text)")
            throw ExitCode(1)
        }
        print(text)
    }

    /// The publish body of the flags, with `appNotificationId` `id`.
    func publishBody(id: String) -> [String: Any] {
        var object: [String: Any] = ["appNotificationId": id]
        var payload: [String: Any] = [:]
        if title != nil || body != nil {
            var visual: [String: String] = [:]
            visual["title"] = title
            visual["body"] = body
            payload["visualContent"] = visual
        }
        payload["rawContent"] = raw
        object["payload"] = payload
        object["priority"] = priority
        return object
    }

    /// The base URL and the publisher key, from the flags or hub.yaml.
    func resolveTarget() throws -> (String, Secret) {
        try Self.resolveTarget(options: options, app: app, url: url, key: key, publisher: publisher)
    }

    /// The base URL (`url`, else server.listen of hub.yaml) and the publisher key of `app` (`key`,
    /// else `publisher`'s or the first publisher's of hub.yaml): what `hub publish` and
    /// `hub broadcast` post with.
    static func resolveTarget(
        options: ConfigOption, app: String, url: String?, key: String?, publisher: String?
    ) throws -> (String, Secret) {
        var file: HubFile?
        if url == nil || key == nil { file = try options.loadOrExit() }
        let base: String
        if let url {
            base = url.hasSuffix("/") ? String(url.dropLast()) : url
        } else if let server = file?.server {
            let host = ["0.0.0.0", "::", ""].contains(server.host) ? "127.0.0.1" : server.host
            base = "http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)"
        } else {
            base = "http://127.0.0.1:8080"
        }
        if let key {
            switch SecretReference.resolve(key, relativeTo: FileManager.default.currentDirectoryPath) {
            case .success(let secret): return (base, secret)
            case .failure(let problem): throw ValidationError("--key\(problem.message)")
            }
        }
        guard let mapped = file?.apps.first(where: { $0.id == app }) else {
            throw ValidationError("\(options.config) has no app '\(app)'; pass --key or fix --app")
        }
        guard let chosen = mapped.publishers.first(where: { publisher == nil || $0.name == publisher }) else {
            let names = mapped.publishers.map(\.name).joined(separator: ", ")
            throw ValidationError(
                publisher == nil
                    ? "\(app) has no publishers in \(options.config); add one or pass --key"
                    : "\(app) has no publisher '\(publisher ?? "")'; its publishers: \(names)")
        }
        return (base, chosen.key)
    }

    /// Percent-encodes one path segment.
    static func escape(_ segment: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }
}
