import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// hub.yaml `rateLimits` against `hub serve`, over HTTP.
@Suite("hub serve rate limits")
struct RateLimitTests {
    static let tasksKey = "tasks-publisher-key-0123456789"

    /// The serve config plus a second app, `tasks.fabrikam.com`, with its own publisher key.
    static func writeTwoApps(in directory: URL, extra: String, server: String = "") throws {
        try tasksKey.write(to: directory.appendingPathComponent("tasks.key"), atomically: true, encoding: .utf8)
        try writeServeConfig(
            in: directory, extra: extra,
            appExtra: """
                  - id: tasks.fabrikam.com
                    platforms: { android: { appIds: [com.fabrikam.tasks] } }
                    publishers: [ { name: backend, key: file:tasks.key } ]
                """, server: server)
    }

    @Test("a noisy app's publisher key gets 429 with Retry-After; a quiet app's publishes all succeed meanwhile")
    func noisyAppCannotStarveQuietOne() async throws {
        let workspace = try makeWorkspace()
        try Self.writeTwoApps(in: workspace, extra: "rateLimits: { publisherKey: 50/m, userPublishes: off }")
        let hub = try await RunningHub(directory: workspace)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)

        async let noisy = Self.publishMany(http, app: "notes.contoso.com", key: http.publisherKey, count: 300)
        async let quiet = Self.publishMany(http, app: "tasks.fabrikam.com", key: Self.tasksKey, count: 40)
        let (noisyAnswers, quietAnswers) = try await (noisy, quiet)

        #expect(quietAnswers.allSatisfy { $0.status == 201 }, "\(quietAnswers.filter { $0.status != 201 }.prefix(3))")
        let limited = noisyAnswers.filter { $0.status == 429 }
        // 50 at once, then one more per 1.2 s: most of 300 are refused.
        #expect(limited.count >= 200, "\(noisyAnswers.count) answers, \(limited.count) 429")
        #expect(noisyAnswers.allSatisfy { $0.status == 201 || $0.status == 429 })
        let first = try #require(limited.first)
        #expect(Int(first.retryAfter ?? "") ?? 0 >= 1)
        #expect(first.contentType == "application/problem+json")
        #expect(first.body.contains("https://notificationhub.dev/problems/rate-limited"))
        let metrics = try await http.request(.GET, "/metrics", bearer: "").body
        #expect(
            metrics.split(separator: "\n").contains {
                $0.hasPrefix("hub_rate_limited_total{") && $0.contains(#"limit="publisherKey""#)
                    && $0.contains(#"app="notes.contoso.com""#) && $0.hasSuffix(" \(limited.count)")
            }, "\(metrics.split(separator: "\n").filter { $0.contains("rate_limited") })")
        #expect(
            !metrics.split(separator: "\n").contains {
                $0.hasPrefix("hub_rate_limited_total{") && $0.contains(#"app="tasks.fabrikam.com""#)
            })
    }

    @Test(
        "per user publishes, per device token, and failed authentication per client IP (X-Forwarded-For of a trusted proxy)"
    )
    func perUserDeviceAndClient() async throws {
        let workspace = try makeWorkspace()
        try Self.writeTwoApps(
            in: workspace, extra: "rateLimits: { userPublishes: 5/h, deviceToken: 5/h, clientIP: 5/h }",
            server: "trustedProxies: [127.0.0.1]")
        let hub = try await RunningHub(directory: workspace)
        defer { hub.signal(SIGKILL) }
        let http = HubHTTP(base: hub.baseURL)

        // Publishes to alice: 5, then 429; bob is not affected.
        var statuses: [Int] = []
        for index in 0..<6 { statuses.append(try await http.publish(user: "alice", id: "n\(index)")) }
        #expect(statuses == [201, 201, 201, 201, 201, 429])
        #expect(try await http.publish(user: "bob", id: "n0") == 201)

        // Feed reads with alice's token: 5, then 429; bob's token is not affected.
        let alice = try await http.userToken("alice")
        statuses = []
        for _ in 0..<6 {
            statuses.append(try await http.request(.GET, "/v1/apps/notes.contoso.com/me/feed", bearer: alice).status)
        }
        #expect(statuses == [200, 200, 200, 200, 200, 429])
        let bob = try await http.userToken("bob")
        #expect(try await http.request(.GET, "/v1/apps/notes.contoso.com/me/feed", bearer: bob).status == 200)

        // Bad tokens from one client (behind the trusted proxy 127.0.0.1): 5 × 401, then 429.
        let attacker = ["X-Forwarded-For": "203.0.113.7"]
        statuses = []
        for _ in 0..<7 {
            statuses.append(
                try await Self.send(
                    http, "/v1/apps/notes.contoso.com/me/feed", bearer: "not-a-token", headers: attacker
                )
                .status)
        }
        #expect(statuses == [401, 401, 401, 401, 401, 429, 429])
        // Another client is not affected (the bad token above has used up its own bucket too, so
        // it sends another one); known-good credentials from the blocked client are not either.
        #expect(
            try await Self.send(
                http, "/v1/apps/notes.contoso.com/me/feed", bearer: "another-bad-token",
                headers: ["X-Forwarded-For": "198.51.100.2"]
            ).status == 401)
        #expect(
            try await Self.send(
                http, "/v1/apps/notes.contoso.com/me/feed", bearer: bob, headers: attacker
            ).status == 200)
        let metrics = try await http.request(.GET, "/metrics", bearer: "").body
        for limit in ["userPublishes", "deviceToken", "clientIP"] {
            #expect(metrics.contains(#"limit="\#(limit)""#), "\(limit)")
        }
    }

    struct Answer: Sendable, CustomStringConvertible {
        var status: Int
        var retryAfter: String?
        var contentType: String?
        var body: String
        var description: String { "\(status) \(body.prefix(200))" }
    }

    static func send(
        _ http: HubHTTP, _ path: String, method: HTTPMethod = .GET, bearer: String, json: String? = nil,
        headers: [String: String] = [:], withAuthorization: Bool = true
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: http.base + path)
        request.method = method
        if withAuthorization { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
            contentType: response.headers.first(name: "Content-Type"), body: String(buffer: body))
    }

    /// `count` publishes to distinct users, 16 at a time.
    static func publishMany(_ http: HubHTTP, app: String, key: String, count: Int) async throws -> [Answer] {
        try await withThrowingTaskGroup(of: Answer.self) { group in
            var answers: [Answer] = []
            for index in 0..<count {
                if index >= 16, let answer = try await group.next() { answers.append(answer) }
                group.addTask {
                    try await send(
                        http, "/v1/apps/\(app)/users/user\(index)/notifications", method: .POST, bearer: key,
                        json: #"{"appNotificationId":"n\#(index)","payload":{"rawContent":"x"}}"#)
                }
            }
            for try await answer in group { answers.append(answer) }
            return answers
        }
    }
}
