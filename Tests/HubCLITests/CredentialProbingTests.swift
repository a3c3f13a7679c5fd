import AsyncHTTPClient
import Foundation
import HubTesting
import NIOCore
import NIOHTTP1
import Testing

/// Issue 46, points 3, 4 and 6 against `hub serve`: failed console sign-ins count against the
/// client-IP limit, app IDs cannot be probed, and the files the hub makes are its user's only.
@Suite("hub serve: credential probing and private files")
struct CredentialProbingTests {
    static let unknown = "nope.example"
    static let known = "tasks.fabrikam.com"

    /// The answer to `path` (an app's route, `{app}` in it) for the known and the unknown app,
    /// each from an address of its own (so neither spends the other's budget).
    static func pair(
        _ http: HubHTTP, _ path: String, method: HTTPMethod = .GET, bearer: String?, json: String? = nil,
        address: Int
    ) async throws -> (known: RateLimitTests.Answer, unknown: RateLimitTests.Answer) {
        func send(_ app: String, _ client: String) async throws -> RateLimitTests.Answer {
            try await RateLimitTests.send(
                http, path.replacingOccurrences(of: "{app}", with: app), method: method, bearer: bearer ?? "",
                json: json, headers: ["X-Forwarded-For": client], withAuthorization: bearer != nil)
        }
        return (try await send(known, "198.51.100.\(address)"), try await send(unknown, "203.0.113.\(address)"))
    }

    @Test("an unknown app ID answers as a known one to a caller without valid credentials (401), and counts")
    func unknownAppsAnswerLikeKnownOnes() async throws {
        let workspace = try makeWorkspace()
        try RateLimitTests.writeTwoApps(
            in: workspace, extra: "rateLimits: { clientIP: 6/h }", server: "trustedProxies: [127.0.0.1]")
        let hub = try await RunningHub(directory: workspace)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)
        let notesUser = try await http.userToken("alice")
        let publish = #"{"appNotificationId":"n1","payload":{"rawContent":"x"}}"#

        // No credentials, a malformed token, a user token of another app, a publisher key of
        // another app: on device routes, publisher routes and the routes that also take the admin token.
        let cases: [(String, HTTPMethod, String?, String?)] = [
            ("/v1/apps/{app}/me/endpoints", .GET, nil, nil),
            ("/v1/apps/{app}/me/endpoints", .GET, "not-a-token", nil),
            ("/v1/apps/{app}/me/feed", .GET, notesUser, nil),
            ("/v1/apps/{app}/users/bob/notifications", .POST, nil, publish),
            ("/v1/apps/{app}/users/bob/notifications", .POST, http.publisherKey, publish),
            ("/v1/apps/{app}/users/bob/notifications", .GET, http.publisherKey, nil),
            ("/v1/apps/{app}/users/bob/notifications/n1/deliveries", .GET, http.publisherKey, nil),
            ("/v1/apps/{app}/statistics/history", .GET, http.publisherKey, nil),
        ]
        for (index, (path, method, bearer, json)) in cases.enumerated() {
            let (known, unknown) = try await Self.pair(
                http, path, method: method, bearer: bearer, json: json, address: index + 1)
            #expect(known.status == 401, "\(method) \(path): \(known)")
            #expect(unknown.status == known.status, "\(method) \(path): \(unknown)")
            #expect(unknown.contentType == known.contentType)
            #expect(
                unknown.body.replacingOccurrences(of: Self.unknown, with: Self.known) == known.body,
                "\(method) \(path):\n\(known.body)\n\(unknown.body)")
        }

        // The admin token may learn that there is no such app.
        for path in ["/v1/apps/\(Self.unknown)/statistics/history", "/v1/apps/\(Self.unknown)/endpoints"] {
            let answer = try await RateLimitTests.send(http, path, bearer: http.adminToken)
            #expect(answer.status == 404, "\(path): \(answer)")
        }

        // Probes of unknown apps spend the address's one budget: 6 × 401, then 429 for a known app too.
        let prober = ["X-Forwarded-For": "192.0.2.99"]
        var statuses: [Int] = []
        for index in 0..<6 {
            statuses.append(
                try await RateLimitTests.send(
                    http, "/v1/apps/probe\(index).example/me/endpoints", bearer: "not-a-token", headers: prober
                ).status)
        }
        #expect(statuses == [401, 401, 401, 401, 401, 401])
        let limited = try await RateLimitTests.send(
            http, "/v1/apps/\(Self.known)/me/endpoints", bearer: "not-a-token", headers: prober)
        #expect(limited.status == 429, "\(limited)")
        #expect(Int(limited.retryAfter ?? "") ?? 0 >= 1)
        let unknownToo = try await RateLimitTests.send(
            http, "/v1/apps/probe9.example/me/endpoints", bearer: "not-a-token", headers: prober)
        #expect(unknownToo.status == 429, "\(unknownToo)")
    }

    @Test("wrong admin tokens at POST /console/login spend the address's budget: 401 each, then 429 with Retry-After")
    func consoleSignInIsLimited() async throws {
        let workspace = try makeWorkspace()
        try RateLimitTests.writeTwoApps(
            in: workspace, extra: "rateLimits: { clientIP: 5/h }", server: "trustedProxies: [127.0.0.1]")
        let hub = try await RunningHub(directory: workspace)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)
        // Without following the 303 of a sign-in that worked.
        let client = HTTPClient(configuration: .init(redirectConfiguration: .disallow))
        do {
            try await Self.guessAdminTokens(hub: hub, http: http, client: client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static func guessAdminTokens(hub: RunningHub, http: HubHTTP, client: HTTPClient) async throws {
        func signIn(_ token: String, from address: String) async throws -> RateLimitTests.Answer {
            var request = HTTPClientRequest(url: hub.baseURL + "/console/login")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.headers.add(name: "X-Forwarded-For", value: address)
            request.body = .bytes(ByteBuffer(string: "token=\(token)"))
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            return RateLimitTests.Answer(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                contentType: response.headers.first(name: "Content-Type"), body: String(buffer: body))
        }

        let guesser = "203.0.113.50"
        var answers: [RateLimitTests.Answer] = []
        for index in 0..<7 { answers.append(try await signIn("guess-\(index)", from: guesser)) }
        #expect(answers.map(\.status) == [401, 401, 401, 401, 401, 429, 429], "\(answers)")
        let limited = answers[5]
        #expect(Int(limited.retryAfter ?? "") ?? 0 >= 1)
        #expect(limited.contentType == "application/problem+json")
        #expect(limited.body.contains("https://notificationhub.dev/problems/rate-limited"))
        // Refused before the token is compared: the right one gets 429 from that address too.
        #expect(try await signIn(http.adminToken, from: guesser).status == 429)
        // One budget per address: the API refuses the guesser's bad credentials as well.
        let api = try await RateLimitTests.send(
            http, "/v1/apps/notes.contoso.com/me/feed", bearer: "not-a-token", headers: ["X-Forwarded-For": guesser])
        #expect(api.status == 429, "\(api)")
        // Another address signs in.
        let other = try await signIn(http.adminToken, from: "198.51.100.50")
        #expect(other.status == 303, "\(other)")
    }

    @Test("under umask 000, the SQLite folder is 0700 and the database, its WAL and SHM and the cursor key 0600")
    func privateFiles() async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let hub = try await ListeningProcess(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", #"umask 000 && exec "$0" serve --config hub.yaml"#, HubProcess.executable.path], in: workspace)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)

        func mode(_ name: String) throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: workspace.appendingPathComponent(name).path)
            return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode("data") == 0o700)
        for name in ["hub.sqlite", "hub.sqlite-wal", "hub.sqlite-shm", "hub.sqlite.cursor-key"] {
            let found = try mode("data/" + name)
            #expect(found == 0o600, "\(name): \(String(found, radix: 8))")
        }
    }
}
