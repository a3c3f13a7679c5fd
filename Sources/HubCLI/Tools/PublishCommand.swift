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
    @OptionGroup var target: PublisherOptions
    @Option(help: "The user to notify.") var user: String?
    @Option(help: "A file of user IDs, one a line, to notify in batches (instead of --user).") var usersFile: String?
    @Option(help: "Users per batch request with --users-file, 1 to 1000.") var batchSize = 1000
    @Option(help: "appNotificationId (the same one again updates it); default: a new one.") var id: String?
    @Option(help: "Priority: none, low or high.") var priority: String?

    /// The app's ID.
    var app: String { target.app }

    func validate() throws {
        guard (user == nil) != (usersFile == nil) else {
            throw ValidationError("give --user (one user) or --users-file (many), not both")
        }
        guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be from 1 to 1000") }
    }

    func run() async throws {
        let (base, publisherKey) = try target.resolveTarget(options)
        let object = publishBody(id: id ?? "cli-\(UUID().uuidString.lowercased())")
        guard let user else {
            try await publishToUsersFile(object, base: base, key: publisherKey)
            return
        }
        let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        let path = "/v1/apps/\(Self.escape(app))/users/\(Self.escape(user))/notifications"
        let request = PublisherOptions.request(base + path, key: publisherKey, json: json)
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
        var object: [String: Any] = ["appNotificationId": id, "payload": target.payload]
        object["priority"] = priority
        return object
    }

    /// Percent-encodes one path segment.
    static func escape(_ segment: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }
}
