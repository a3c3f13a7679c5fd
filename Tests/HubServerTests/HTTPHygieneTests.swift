import Foundation
import HTTPTypes
import HubServer
import HubTesting
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// HTTP hygiene over real connections: 405 with Allow, 414 and 431 problems, authentication
/// before any other check, CORS for the mapped web origins, and the access log.
@Suite("HTTP hygiene")
struct HTTPHygieneTests {
    @Test("a wrong method on a known path gets 405 problem+json with Allow; OPTIONS gets 204 with Allow")
    func methodNotAllowed() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.post, "/v1/apps/\(Harness.notes)/me/feed", "GET, HEAD, OPTIONS"),
                (.put, "/healthz", "GET, HEAD, OPTIONS"),
                (.head, "/beta/me/notifications", "POST, OPTIONS"),
                (.patch, "/v1/apps/\(Harness.notes)/users/bob/notifications", "GET, HEAD, POST, OPTIONS"),
                (.post, "/v1/apps/\(Harness.notes)/me/endpoints/e1", "GET, HEAD, PUT, DELETE, OPTIONS"),
                (.get, "/beta/me/notifications", "POST, OPTIONS"),
                (.delete, "/v1/apps/\(Harness.notes)/statistics", "GET, HEAD, OPTIONS"),
            ]
            for (method, path, allow) in cases {
                // No credentials: the method is refused before anyone is asked for them.
                let response = try await client.execute(uri: path, method: method)
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(response.headers[.allow] == allow, "\(method) \(path)")
                if method != .head {
                    #expect(response.headers[.contentType] == "application/problem+json")
                    #expect(response.problemType == "method-not-allowed", "\(method) \(path)")
                }
                let options = try await client.execute(uri: path, method: .options)
                #expect(options.status == .noContent, "OPTIONS \(path)")
                #expect(options.headers[.allow] == allow, "OPTIONS \(path)")
            }
            let unknown = try await client.execute(uri: "/v1/nothing/here", method: .post)
            #expect(unknown.status == .notFound)
            #expect(unknown.headers[.allow] == nil)
        }
    }

    @Test("HEAD is answered wherever GET is: same status and header fields (Content-Length too), no body")
    func headAnsweredAsGet() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let targets: [(String, [String])] = [
                ("/healthz", []), ("/v1/apps", []), ("/openapi.yaml", []),
                ("/v1/apps/\(Harness.notes)/me/notifications", ["Authorization: Bearer \(alice)"]),
            ]
            for (target, headers) in targets {
                let lines = ["Host: h"] + headers + ["Connection: close"]
                let fields = lines.joined(separator: "\r\n")
                let get = try await RawConnection.exchange(
                    port: port, [Array("GET \(target) HTTP/1.1\r\n\(fields)\r\n\r\n".utf8)])
                let head = try await RawConnection.exchange(
                    port: port, [Array("HEAD \(target) HTTP/1.1\r\n\(fields)\r\n\r\n".utf8)])
                #expect(head.statuses == get.statuses, "HEAD \(target): \(head.text.prefix(300))")
                #expect(head.statuses.first != 405, "HEAD \(target)")
                let getHead = get.text.components(separatedBy: "\r\n\r\n")[0]
                let headHead = head.text.components(separatedBy: "\r\n\r\n")[0]
                let length = { (text: String) in
                    text.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                }
                #expect(length(headHead) == length(getHead), "HEAD \(target): \(headHead)")
                #expect(head.text.hasSuffix("\r\n\r\n"), "HEAD \(target) sent a body: \(head.text.suffix(200))")
                #expect(
                    get.text.components(separatedBy: "\r\n\r\n").dropFirst().joined().count > 0,
                    "GET \(target) had no body to compare with")
            }
        }
    }

    @Test("an oversized URL gets 414 and an oversized head 431, as problem+json, then the connection closes")
    func oversizedHeads() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let port = try #require(client.port)
            let feed = "/v1/apps/\(Harness.notes)/me/feed?cursor="
            let cases: [(String, String, [String], Int, String)] = [
                ("a 9 KB cursor", feed + String(repeating: "A", count: 9 * 1024), [], 414, "uri-too-long"),
                ("a 100 KB cursor", feed + String(repeating: "A", count: 100 * 1024), [], 414, "uri-too-long"),
                (
                    "a 90 KB header", "/healthz", ["X-Padding: " + String(repeating: "p", count: 90 * 1024)], 431,
                    "header-fields-too-large"
                ),
                (
                    "2,000 headers", "/healthz", (0..<2000).map { "X-H\($0): \(String(repeating: "v", count: 40))" },
                    431,
                    "header-fields-too-large"
                ),
                (
                    "a long URL and a long header", feed + String(repeating: "A", count: 8000),
                    ["Authorization: Bearer \(alice)", "X-Padding: " + String(repeating: "p", count: 80 * 1024)], 431,
                    "header-fields-too-large"
                ),
            ]
            for (what, target, headers, status, type) in cases {
                let response = try await RawHTTP.get(port: port, target, headers: headers)
                #expect(response.status == status, "\(what): \(response.status) \(response.body.prefix(200))")
                #expect(response.headers["content-type"] == "application/problem+json", "\(what)")
                #expect(response.problemType == type, "\(what): \(response.body.prefix(200))")
                #expect(!response.body.contains("AAAA") && !response.body.contains("pppp"), "\(what): echoed")
                if status == 431 || target.utf8.count > 80 * 1024 {
                    #expect(response.closed, "\(what): the connection stays open")
                }
            }
            // A garbled request line gets a problem too, not a bare 400.
            let garbled = try await RawHTTP.exchange(port: port, Array("GET /\u{1}x HTTP/1.1\r\n\r\n".utf8))
            #expect(garbled.status == 400)
            #expect(garbled.problemType == "invalid-request")
            // HTTP/1.1 needs Host (RFC 9112 §3.2); HTTP/1.0 does not.
            let hostless = try await RawHTTP.exchange(port: port, Array("GET /healthz HTTP/1.1\r\n\r\n".utf8))
            #expect(hostless.status == 400)
            #expect(hostless.body.contains("Host"), "\(hostless.body.prefix(200))")
            let old = try await RawHTTP.exchange(port: port, Array("GET /healthz HTTP/1.0\r\n\r\n".utf8))
            #expect(old.status == 200)
            // The server still answers new connections.
            let healthy = try await RawHTTP.get(port: port, "/healthz")
            #expect(healthy.status == 200)
        }
    }

    @Test("without credentials every route answers 401 first, whatever else is wrong with the request")
    func authenticationFirst() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let subscription = try await client.send(.post, "/v1/apps/\(Harness.notes)/me/subscription", bearer: alice)
            let validUNS = try #require(subscription.object.string("id"))
            let notes = Harness.notes
            let bad = "bob%00evil"
            let requests: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/v1/apps/\(notes)/users/\(bad)/notifications", "{not json"),
                (.get, "/v1/apps/\(notes)/users/\(bad)/notifications?limit=zero&status=bogus", nil),
                (.get, "/v1/apps/\(notes)/users/\(bad)/notifications/\(bad)", nil),
                (.delete, "/v1/apps/\(notes)/users/\(bad)/notifications/\(bad)", nil),
                (.put, "/v1/apps/\(notes)/me/endpoints/\(bad)", "[]"),
                (.get, "/v1/apps/\(notes)/me/endpoints", nil),
                (.get, "/v1/apps/\(notes)/me/endpoints/\(bad)", nil),
                (.delete, "/v1/apps/\(notes)/me/endpoints/\(bad)", nil),
                (.get, "/v1/apps/\(notes)/me/feed?cursor=forged&limit=-1&wait=x", nil),
                (.get, "/v1/apps/\(notes)/me/notifications?readState=bogus", nil),
                (.get, "/v1/apps/\(notes)/me/notifications/\(bad)", nil),
                (.patch, "/v1/apps/\(notes)/me/notifications/\(bad)", #"{"readState":7}"#),
                (.post, "/v1/apps/\(notes)/me/subscription", nil),
                (.get, "/v1/apps", nil),
                (.get, "/v1/apps/\(notes)/endpoints?state=bogus", nil),
                (.get, "/v1/apps/\(notes)/users/\(bad)/endpoints", nil),
                (.get, "/v1/apps/\(notes)/statistics", nil),
            ]
            for bearer in [nil, "not-a-token", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"] {
                for (method, path, body) in requests {
                    let response = try await client.send(
                        method, path, bearer: bearer, json: body,
                        headers: [.hubEndpoint: "bad endpoint!", .contentType: "text/plain"])
                    #expect(response.status == .unauthorized, "\(method) \(path) with \(bearer ?? "no token")")
                    #expect(response.headers[.wwwAuthenticate] != nil)
                }
                // Graph's publish: a valid, a forged and a missing X-UNS-ID all get the same 401.
                var answers: Set<String> = []
                for uns in [validUNS, "forged", nil] {
                    let response = try await client.send(
                        .post, "/beta/me/notifications", bearer: bearer, json: notification("g"),
                        headers: uns.map { [.unsID: $0] } ?? [:])
                    #expect(response.status == .unauthorized, "X-UNS-ID \(uns ?? "missing")")
                    answers.insert(response.text)
                }
                #expect(answers.count == 1, "the answer tells the subscription IDs apart: \(answers)")
            }
        }
    }

    @Test("CORS: the app's mapped web origins get preflight and response headers; other origins none")
    func cors() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            let feed = "/v1/apps/\(Harness.notes)/me/feed"
            let mapped = "https://notes.contoso.com"
            let preflight = try await client.execute(
                uri: feed, method: .options,
                headers: [
                    .origin: mapped, .accessControlRequestMethod: "GET",
                    .accessControlRequestHeaders: "authorization, last-event-id, x-hub-endpoint",
                ])
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == mapped)
            #expect(preflight.headers[.accessControlAllowMethods] == "GET, HEAD, OPTIONS")
            let allowed = Set(
                (preflight.headers[.accessControlAllowHeaders] ?? "").lowercased().split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces)
                })
            #expect(
                allowed.isSuperset(of: ["authorization", "content-type", "accept", "last-event-id", "x-hub-endpoint"]))
            #expect(preflight.headers[.accessControlMaxAge] != nil)
            #expect(preflight.headers[.accessControlAllowCredentials] == nil)
            let patch = try await client.execute(
                uri: "/v1/apps/\(Harness.notes)/me/notifications/n1", method: .options,
                headers: [.origin: mapped, .accessControlRequestMethod: "PATCH"])
            #expect(patch.headers[.accessControlAllowMethods] == "GET, HEAD, PATCH, OPTIONS")

            let answered = try await client.send(.get, feed, bearer: alice, headers: [.origin: mapped])
            #expect(answered.status == .ok)
            #expect(answered.headers[.accessControlAllowOrigin] == mapped)
            #expect(answered.headers[.vary]?.contains("Origin") == true)
            #expect(answered.headers[.accessControlExposeHeaders]?.contains("Retry-After") == true)
            let refused = try await client.send(.get, feed, headers: [.origin: mapped])
            #expect(refused.status == .unauthorized)
            #expect(refused.headers[.accessControlAllowOrigin] == mapped, "a web client must be able to read a 401")

            // Unmapped origins, another app's routes, and routes outside an app get nothing.
            let foreign: [(String, String)] = [
                ("https://evil.example", feed), ("http://notes.contoso.com", feed),
                ("https://notes.contoso.com.evil.example", feed), ("null", feed),
                (mapped, "/v1/apps/\(Harness.tasks)/me/feed"), (mapped, "/beta/me/notifications"), (mapped, "/v1/apps"),
            ]
            for (origin, path) in foreign {
                let options = try await client.execute(
                    uri: path, method: .options, headers: [.origin: origin, .accessControlRequestMethod: "GET"])
                let get = try await client.send(.get, path, bearer: alice, headers: [.origin: origin])
                for response in [options, get] {
                    let cors = response.headers.filter { $0.name.rawName.lowercased().hasPrefix("access-control-") }
                    #expect(cors.isEmpty, "\(origin) on \(path): \(cors)")
                }
            }
        }
    }

    @Test("one access log line per request: method, route template, status, duration, app; no secrets")
    func accessLog() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice@contoso")
        let logs = LogCapture()
        let logger = logs.logger(label: "access-log-test", level: .info)
        let secrets = try await harness.run(.live, logger: logger) { client in
            let published = try await client.publish(notification("n-secret-id"), user: "alice%40contoso")
            #expect(published.status == .created)
            let feed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: alice)
            let cursor = try #require(feed.object.string("cursor"))
            _ = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/me/feed?cursor=\(cursor)&limit=5", bearer: alice)
            _ = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: "wrong-token")
            _ = try await client.send(.post, "/healthz")
            _ = try await client.send(.get, "/no/such/path?token=query-secret")
            _ = try await client.send(.get, "/v1/apps/unknown.example.com/me/feed", bearer: alice)
            return [alice, Harness.notesKey, cursor, "wrong-token", "query-secret", "n-secret-id", "alice@contoso"]
        }
        let lines = logs.records.filter { $0.message == "request" }
        let summary = lines.map {
            "\($0.metadata["method"] ?? "-") \($0.metadata["route"] ?? "-") \($0.metadata["status"] ?? "-") \($0.metadata["app"] ?? "-")"
        }
        #expect(
            summary == [
                "POST /v1/apps/{app}/users/{userId}/notifications 201 notes.contoso.com",
                "GET /v1/apps/{app}/me/feed 200 notes.contoso.com",
                "GET /v1/apps/{app}/me/feed 200 notes.contoso.com",
                "GET /v1/apps/{app}/me/feed 401 notes.contoso.com",
                "POST /healthz 405 -",
                "GET NotFound 404 -",
                "GET /v1/apps/{app}/me/feed 401 -",
            ], "\(summary)")
        #expect(lines.allSatisfy { $0.level == .info && Double($0.metadata["duration_ms"] ?? "") != nil })
        let everything = logs.records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in secrets {
            #expect(!everything.contains(secret), "the log holds \(secret.prefix(12))…")
        }
    }

    @Test("a long-poll that waited logs its line with its own request ID, as any request")
    func parkedAccessLog() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let logs = LogCapture()
        let logger = logs.logger(label: "parked-log-test", level: .info)
        try await harness.run(.live, logger: logger) { client in
            let feed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/feed", bearer: alice)
            let cursor = try #require(feed.object.string("cursor"))
            for _ in 0..<2 {
                let waited = try await client.send(
                    .get, "/v1/apps/\(Harness.notes)/me/feed?cursor=\(cursor)&wait=1", bearer: alice)
                #expect(waited.status == .ok)
            }
        }
        let polls = logs.records.filter {
            $0.message == "request" && $0.metadata["route"] == "/v1/apps/{app}/me/feed"
        }
        #expect(polls.count == 3, "\(polls.map(\.metadata))")
        let ids = polls.compactMap { $0.metadata["hb.request.id"] }
        #expect(ids.count == 3 && Set(ids).count == 3, "\(polls.map(\.metadata))")
    }
}
