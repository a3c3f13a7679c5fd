import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubConfig
import HubCore
import NIOCore

/// `hub broadcast`: one notification for an audience (every user, tagged users or a list of
/// users), through a running hub's `POST /v1/apps/{app}/broadcasts`, then its progress.
struct BroadcastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Publish a notification to every user, tagged users or a list of users (POST …/broadcasts).",
        discussion: """
            Give one audience: --all, --tag (users with any of them; add --all-tag for tags every user \
            must have) or --users-file (one user ID a line). Uses the app's first publisher key in \
            hub.yaml (or --publisher's, or --key) and the hub at --url. Follows the broadcast until it \
            is done, with a progress bar on a terminal (one line a second otherwise); --no-wait prints \
            the accepted broadcast and returns. Exits 1 with the hub's problem when it refuses, or when \
            the broadcast is cancelled.
            """)

    @OptionGroup var options: ConfigOption
    @OptionGroup var target: PublisherOptions
    @Flag(help: "Every user with an active endpoint or a feed in the app.") var all = false
    @Option(name: .customLong("tag"), help: "Users with this tag (repeat: any of them).") var anyOf: [String] = []
    @Option(name: .customLong("all-tag"), help: "Users with this tag too (repeat: all of them).") var allOf: [String] =
        []
    @Option(help: "A file of user IDs, one a line (at most 100,000).") var usersFile: String?
    @Option(help: "appNotificationId (users who have it get it updated); default: a new one.") var id: String?
    @Flag(help: "Print the accepted broadcast and return without following it.") var noWait = false

    func validate() throws {
        let audiences = [all, !anyOf.isEmpty || !allOf.isEmpty, usersFile != nil].filter { $0 }.count
        guard audiences == 1 else { throw ValidationError("give one audience: --all, --tag/--all-tag or --users-file") }
    }

    func run() async throws {
        let (base, publisherKey) = try target.resolveTarget(options)
        var object: [String: Any] = ["audience": try audience(), "payload": target.payload]
        object["appNotificationId"] = id
        let path = "/v1/apps/\(PublishCommand.escape(target.app))/broadcasts"
        let created = try await Self.send(
            base + path, key: publisherKey, json: try JSONSerialization.data(withJSONObject: object))
        guard !noWait, let broadcastID = created["id"] as? String else {
            print(
                String(
                    decoding: try JSONSerialization.data(withJSONObject: created, options: [.sortedKeys]), as: UTF8.self
                ))
            return
        }
        let progress = ProgressLine(terminal: isatty(STDOUT_FILENO) != 0)
        var current = created
        while true {
            progress.show(current)
            let status = current["status"] as? String ?? ""
            if status == "done" || status == "cancelled" { break }
            try await Task.sleep(for: .milliseconds(progress.terminal ? 200 : 1000))
            current = try await Self.send(base + path + "/" + PublishCommand.escape(broadcastID), key: publisherKey)
        }
        progress.finish(current)
        if current["status"] as? String == "cancelled" { throw ExitCode(1) }
    }

    /// The `audience` object of the request.
    func audience() throws -> [String: Any] {
        if all { return ["allUsers": true] }
        if let usersFile { return ["users": try Self.users(inFile: usersFile)] }
        var tags: [String: Any] = [:]
        if !anyOf.isEmpty { tags["anyOf"] = anyOf }
        if !allOf.isEmpty { tags["allOf"] = allOf }
        return ["tags": tags]
    }

    /// The user IDs of a file as `hub publish --users-file` reads them
    /// (``PublishCommand/readUsers(_:)``); a line that is no identifier is refused with its number,
    /// since a broadcast's audience is refused whole.
    static func users(inFile path: String) throws -> [String] {
        let users = try PublishCommand.readUsers(path).map { user in
            if let violation = Identifier.violation(in: user.id) {
                throw ValidationError("\(path):\(user.line): the user ID \(violation.message)")
            }
            return user.id
        }
        guard users.count <= BroadcastAudience.maxUsers else {
            throw ValidationError(
                "\(path) lists \(users.count) users; a broadcast lists at most \(BroadcastAudience.maxUsers)")
        }
        return users
    }

    /// Sends a POST with `json` (a GET without), and answers the JSON object of a 2xx answer;
    /// anything else exits 1 with it.
    static func send(_ url: String, key: Secret, json: Data? = nil) async throws -> [String: Any] {
        let request = PublisherOptions.request(url, key: key, json: json)
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        } catch {
            printError("\(url) could not be reached: \(error); is `hub serve` running there?")
            throw ExitCode(1)
        }
        let bytes = try await response.body.collect(upTo: 1 << 20)
        guard (200..<300).contains(response.status.code) else {
            printError("the hub answered \(response.status.code): \(String(buffer: bytes))")
            throw ExitCode(1)
        }
        return (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any] ?? [:]
    }
}

/// A broadcast's progress: a bar redrawn in place on a terminal, one line per change otherwise.
struct ProgressLine {
    let terminal: Bool
    private final class Last: @unchecked Sendable { var line = "" }
    private let last = Last()

    /// `published + failed` of `audienceSize` (or of what is known so far).
    static func describe(_ broadcast: [String: Any], width: Int = 30) -> String {
        let published = broadcast["published"] as? Int ?? 0
        let failed = broadcast["failed"] as? Int ?? 0
        let status = broadcast["status"] as? String ?? "?"
        let done = published + failed
        guard let size = broadcast["audienceSize"] as? Int, size > 0 else {
            return "\(status): \(published) published, \(failed) failed"
        }
        let filled = min(width, width * done / size)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return "[\(bar)] \(done)/\(size) \(status): \(published) published, \(failed) failed"
    }

    func show(_ broadcast: [String: Any]) {
        let line = Self.describe(broadcast)
        guard line != last.line else { return }
        last.line = line
        if terminal {
            FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + line).utf8))
        } else {
            print(line)
        }
    }

    func finish(_ broadcast: [String: Any]) {
        show(broadcast)
        if terminal { print() }
        if let id = broadcast["id"] as? String { print("broadcast \(id) \(broadcast["status"] as? String ?? "")") }
    }
}
