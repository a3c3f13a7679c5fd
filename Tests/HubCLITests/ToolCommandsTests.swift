import Foundation
import Testing

@Suite("hub --version, token, publish, health")
struct ToolCommandsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("hub --version prints the version CHANGELOG.md's newest entry names")
    func version() async throws {
        let output = try await HubProcess.run(["--version"], in: Self.root)
        #expect(output.status == 0)
        let version = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.split(separator: ".").count == 3 && version.allSatisfy { $0.isNumber || $0 == "." })
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") && !$0.contains("Unreleased") }
        #expect(newest?.contains(version) == true, "CHANGELOG.md's newest release heading names \(version)")
    }

    @Test("hub token mints a token a device route accepts; a forged one is refused")
    func tokenIsAccepted() async throws {
        let hub = try await RunningHub.served()
        let minted = try await HubProcess.run(
            ["token", "--app", "notes.contoso.com", "--user", "alice", "--ttl", "2h"], in: hub.directory)
        #expect(minted.status == 0, "\(minted.stderr)")
        let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.split(separator: ".").count == 3)
        let claims = try Self.claims(of: token)
        #expect(claims["sub"] as? String == "alice")
        #expect(claims["iss"] as? String == "https://login.contoso.com")
        #expect(claims["aud"] as? String == "contoso-notes")
        let exp = claims["exp"] as? Int ?? 0
        let iat = claims["iat"] as? Int ?? 0
        #expect(exp - iat == 7200)

        let http = HubHTTP(base: hub.baseURL)
        let register = try await http.request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/tablet", bearer: token,
            json: #"{"platform":"windows","appId":"Contoso.Notes_8wekyb3d8bbwe","transport":"polling"}"#)
        #expect(register.status == 201, "\(register.body)")
        let endpoints = try await http.request(.GET, "/v1/apps/notes.contoso.com/me/endpoints", bearer: token)
        #expect(endpoints.status == 200)
        #expect(endpoints.body.contains("tablet"))
        // A token signed with another secret is refused: the route really checks the signature.
        var forged = token.split(separator: ".").map(String.init)
        forged[2] = String(forged[2].reversed())
        let refused = try await http.request(
            .GET, "/v1/apps/notes.contoso.com/me/endpoints", bearer: forged.joined(separator: "."))
        #expect(refused.status == 401)
    }

    @Test("hub token refuses an app whose identities are JWKS only, and an unknown app, saying why")
    func tokenRefusals() async throws {
        let workspace = try makeWorkspace()
        try #"{"keys":[]}"#.write(to: workspace.appendingPathComponent("jwks.json"), atomically: true, encoding: .utf8)
        try """
        apps:
          - id: notes.contoso.com
            platforms: { ios: { appIds: [com.contoso.notes] } }
            identity:
              - { issuer: "https://login.microsoftonline.com/t/v2.0", audiences: [client], jwks: file:jwks.json }
            publishers: [ { name: backend, key: file:publisher.key } ]
        """.write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        let jwksOnly = try await HubProcess.run(
            ["token", "--app", "notes.contoso.com", "--user", "alice"], in: workspace)
        #expect(jwksOnly.status != 0)
        #expect(jwksOnly.stdout.isEmpty)
        #expect(jwksOnly.stderr.contains("JWKS"), "\(jwksOnly.stderr)")
        #expect(jwksOnly.stderr.contains("identity provider"), "\(jwksOnly.stderr)")
        let unknown = try await HubProcess.run(
            ["token", "--app", "other.example.com", "--user", "alice"], in: workspace)
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("no app 'other.example.com'"), "\(unknown.stderr)")
    }

    @Test("hub publish posts to a running hub with the publisher key of hub.yaml (201), and reports a refusal")
    func publish() async throws {
        let hub = try await RunningHub.served()
        let published = try await HubProcess.run(
            [
                "publish", "--app", "notes.contoso.com", "--user", "alice", "--title", "Hello", "--body",
                "From the CLI",
                "--id", "cli-1", "--url", hub.baseURL,
            ], in: hub.directory)
        #expect(published.status == 0, "\(published.stderr)")
        #expect(published.stdout.contains(#""appNotificationId":"cli-1""#), "\(published.stdout)")
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.feedIDs(user: "alice") == ["cli-1"])
        let history = try await http.request(
            .GET, "/v1/apps/notes.contoso.com/users/alice/notifications/cli-1", bearer: http.publisherKey)
        #expect(history.body.contains("From the CLI"))

        try "wrong-key-0123456789".write(
            to: hub.directory.appendingPathComponent("wrong.key"), atomically: true, encoding: .utf8)
        let refused = try await HubProcess.run(
            [
                "publish", "--app", "notes.contoso.com", "--user", "alice", "--title", "x", "--url", hub.baseURL,
                "--key", "file:wrong.key",
            ], in: hub.directory)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("401"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("wrong-key-0123456789"))
    }

    @Test(
        "hub publish --users-file notifies every user of the file in batches; refused users are named by line; a rerun updates"
    )
    func publishUsersFile() async throws {
        let hub = try await RunningHub.served()
        let users = (1...2_500).map { "user-\($0)" }
        // A blank line is skipped; a user ID over 256 bytes is refused by the hub, on its own line.
        var lines = users
        lines.insert("", at: 1_000)
        lines.insert(String(repeating: "x", count: 300), at: 1_500)
        try (lines.joined(separator: "\n") + "\n").write(
            to: hub.directory.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        let arguments = [
            "publish", "--app", "notes.contoso.com", "--users-file", "users.txt", "--title", "Outage",
            "--body", "We are on it", "--id", "outage-1", "--url", hub.baseURL,
        ]
        let first = try await HubProcess.run(arguments, in: hub.directory)
        #expect(first.status == 1, "\(first.stderr)")
        #expect(
            first.stdout.contains("published outage-1 for 2500 of 2501 users (2500 created, 0 updated, 1 refused)"),
            "\(first.stdout)")
        #expect(first.stderr.contains("users.txt:1501: user 'xxx"), "\(first.stderr)")
        #expect(first.stderr.contains("userId"), "\(first.stderr)")
        let http = HubHTTP(base: hub.baseURL)
        for user in ["user-1", "user-1000", "user-2500"] {
            #expect(try await http.feedIDs(user: user) == ["outage-1"], "\(user)")
        }

        try (users.joined(separator: "\r\n")).write(
            to: hub.directory.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        let again = try await HubProcess.run(arguments + ["--batch-size", "700"], in: hub.directory)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("for 2500 of 2500 users (0 created, 2500 updated, 0 refused)"), "\(again.stdout)")
        let history = try await http.request(
            .GET, "/v1/apps/notes.contoso.com/users/user-2500/notifications?status=all", bearer: http.publisherKey)
        #expect(history.body.components(separatedBy: "outage-1").count == 2, "one notification: \(history.body)")

        let both = try await HubProcess.run(arguments + ["--user", "alice"], in: hub.directory)
        #expect(both.status != 0)
        #expect(both.stderr.contains("not both"), "\(both.stderr)")
    }

    @Test("hub broadcast sends to a users file and follows the broadcast to done; a bad line is named")
    func broadcast() async throws {
        let hub = try await RunningHub.served()
        try "alice\nbob\n\ncarol\r\nalice\n".write(
            to: hub.directory.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        let sent = try await HubProcess.run(
            [
                "broadcast", "--app", "notes.contoso.com", "--users-file", "users.txt", "--title", "Outage",
                "--body", "We are on it", "--id", "outage-1", "--url", hub.baseURL,
            ], in: hub.directory)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("3/3 done: 3 published, 0 failed"), "\(sent.stdout)")
        let http = HubHTTP(base: hub.baseURL)
        for user in ["alice", "bob", "carol"] {
            #expect(try await http.feedIDs(user: user) == ["outage-1"], "\(user)")
        }

        try "alice\nbad\u{7}id\n".write(
            to: hub.directory.appendingPathComponent("bad.txt"), atomically: true, encoding: .utf8)
        let refused = try await HubProcess.run(
            [
                "broadcast", "--app", "notes.contoso.com", "--users-file", "bad.txt", "--title", "x", "--url",
                hub.baseURL,
            ],
            in: hub.directory)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("bad.txt:2:"), "\(refused.stderr)")
        let both = try await HubProcess.run(
            ["broadcast", "--app", "notes.contoso.com", "--all", "--tag", "pro", "--title", "x", "--url", hub.baseURL],
            in: hub.directory)
        #expect(both.status != 0)
        #expect(both.stderr.contains("give one audience"), "\(both.stderr)")
    }

    @Test("hub health exits 0 for a ready hub and 1 for one that is down")
    func health() async throws {
        let hub = try await RunningHub.served()
        let up = try await HubProcess.run(["health", "--url", hub.baseURL], in: hub.directory)
        #expect(up.status == 0, "\(up.stderr)")
        let base = hub.baseURL
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
        let down = try await HubProcess.run(["health", "--url", base, "--timeout", "2"], in: hub.directory)
        #expect(down.status == 1)
        #expect(down.stderr.contains("not ready"), "\(down.stderr)")
    }

    @Test("hub map-app --help shows the flags of map")
    func mapAppHelp() async throws {
        let output = try await HubProcess.run(["map-app", "--help"], in: Self.root)
        #expect(output.status == 0)
        for flag in ["--apns-key", "--fcm-service-account", "--wns-sid", "--publisher", "--dry-run"] {
            #expect(output.stdout.contains(flag), "\(flag) missing from map-app --help")
        }
    }

    static func claims(of token: String) throws -> [String: Any] {
        var part = String(token.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        let data = try #require(Data(base64Encoded: part))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}
