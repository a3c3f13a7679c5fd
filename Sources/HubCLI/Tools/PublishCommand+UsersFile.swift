import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubConfig
import HubCore
import NIOCore

// `hub publish --users-file FILE`: the same notification for every user of a file, in batches.
extension PublishCommand {
    /// A user of the file and the line it is on.
    struct FileUser {
        var line: Int
        var id: String
    }

    /// What the batches came to.
    struct Tally {
        var created = 0
        var updated = 0
        /// Users the hub refused: line, user and why.
        var refused: [(line: Int, user: String, reason: String)] = []
    }

    /// Publishes `object` for every user of ``usersFile`` through the batch route, ``batchSize``
    /// users a request; a batch the hub answers with 429 or 503 is sent again after its
    /// `Retry-After` (the same batch: its items are idempotent).
    func publishToUsersFile(_ object: [String: Any], base: String, key: Secret) async throws {
        let users = try Self.readUsers(usersFile ?? "")
        let appNotificationId = object["appNotificationId"] as? String ?? ""
        let progress = ProgressBar(total: users.count)
        var tally = Tally()
        var sent = 0
        for start in stride(from: 0, to: users.count, by: batchSize) {
            let batch = Array(users[start..<min(start + batchSize, users.count)])
            let results = try await send(batch, object, base: base, key: key)
            for (user, result) in zip(batch, results) {
                switch result["status"] as? Int {
                case 201: tally.created += 1
                case 200: tally.updated += 1
                case let status:
                    let problem = result["problem"] as? [String: Any]
                    let errors = (problem?["errors"] as? [[String: Any]] ?? []).compactMap { error -> String? in
                        guard let field = error["field"] as? String, let message = error["message"] as? String else {
                            return nil
                        }
                        // The hub names the item's fields from the body's root; the item is the line here.
                        let name =
                            field.split(separator: ".", maxSplits: 1).dropFirst().first.map { String($0) } ?? field
                        return "\(name) \(message)"
                    }
                    let reason =
                        errors.isEmpty
                        ? (problem?["detail"] as? String ?? "refused") : errors.joined(separator: "; ")
                    tally.refused.append((user.line, user.id, "\(status.map { "\($0)" } ?? "?"): \(reason)"))
                }
            }
            sent += batch.count
            progress.show(sent)
        }
        progress.finish()
        for refused in tally.refused {
            printError("\(usersFile ?? ""):\(refused.line): user '\(refused.user.prefix(80))': \(refused.reason)")
        }
        print(
            "published \(appNotificationId) for \(tally.created + tally.updated) of \(users.count) users "
                + "(\(tally.created) created, \(tally.updated) updated, \(tally.refused.count) refused)")
        if !tally.refused.isEmpty {
            printError(
                "run again with --id \(appNotificationId) to retry: the users it reached are updated, not notified twice"
            )
            throw ExitCode(1)
        }
    }

    /// The user IDs of `path`, one a line (`\r\n` line ends too); empty lines are skipped, nothing
    /// else is trimmed (user IDs are opaque).
    static func readUsers(_ path: String) throws -> [FileUser] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("--users-file \(path) cannot be read as UTF-8 text: \(error.localizedDescription)")
        }
        var users: [FileUser] = []
        // "\r\n" is one Character in Swift: both line ends are separators.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, line) in lines.enumerated() where !line.isEmpty {
            users.append(FileUser(line: index + 1, id: String(line)))
        }
        guard !users.isEmpty else { throw ValidationError("--users-file \(path) has no user IDs (one a line)") }
        return users
    }

    /// Sends one batch; returns its results, in order.
    private func send(
        _ batch: [FileUser], _ object: [String: Any], base: String, key: Secret
    ) async throws -> [[String: Any]] {
        let items = batch.map { user -> [String: Any] in
            var item = object
            item["userId"] = user.id
            return item
        }
        let json = try JSONSerialization.data(withJSONObject: ["notifications": items], options: [.sortedKeys])
        var attempt = 1
        while true {
            let request = PublisherOptions.request(
                base + "/v1/apps/\(Self.escape(app))/notifications/batch", key: key, json: json)
            let response: HTTPClientResponse
            do {
                response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            } catch {
                printError(
                    "\(base) could not be reached: \(error); is `hub serve` running there? "
                        + "Lines \(batch[0].line) to \(batch[batch.count - 1].line) were not sent.")
                throw ExitCode(1)
            }
            let body = try await response.body.collect(upTo: 64 << 20)
            let code = Int(response.status.code)
            if (code == 429 || code == 503) && attempt < 5 {
                let wait = response.headers.first(name: "Retry-After").flatMap { Int($0) } ?? attempt
                attempt += 1
                try await Task.sleep(for: .seconds(min(max(wait, 1), 60)))
                continue
            }
            let answer = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any]
            guard code == 200, let results = answer?["results"] as? [[String: Any]], results.count == batch.count
            else {
                printError(
                    "the hub answered \(code) to the batch of lines \(batch[0].line) to \(batch[batch.count - 1].line): "
                        + String(buffer: body).prefix(2000))
                throw ExitCode(1)
            }
            return results
        }
    }
}

/// A progress bar on stderr when it is a terminal (nothing otherwise):
/// `[##########----------]  12000/20000 users`.
struct ProgressBar {
    let total: Int
    let enabled = isatty(STDERR_FILENO) == 1

    func show(_ done: Int) {
        guard enabled, total > 0 else { return }
        let width = 30
        let filled = width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total) users".utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
