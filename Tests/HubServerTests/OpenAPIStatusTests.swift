import Foundation
import HTTPTypes
import HubServer
import Hummingbird
import HummingbirdTesting
import Testing
import Yams

/// Every status the hub answers is in openapi.yaml: the statuses any route may get (a bad head
/// 400, 414, 431, 503 from the connection cap and the store's deadline; 429 on the rate-limited
/// `/v1/` and `/beta/` routes; 401 on the secured ones) are listed on every operation as shared
/// responses, and every route, probed over a real connection with the requests a fuzzer sends
/// first (no credentials, wrong ones, each kind of right one, bodies that are not what it takes,
/// then again once the client's address is over its limit), answers only statuses its
/// operation documents.
@Suite("OpenAPI document: statuses")
struct OpenAPIStatusTests {
    /// The operations of openapi.yaml: `METHOD /normalized/path` → documented statuses, with the
    /// path as written and whether the operation needs credentials.
    struct Operation {
        var path: String
        var secured: Bool
        var statuses: Set<String>
    }

    static func operations() throws -> (operations: [String: Operation], responses: Set<String>) {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/HubServer/openapi.yaml")
        let document = try #require(try Yams.load(yaml: String(contentsOf: file, encoding: .utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        let shared = Set((components["responses"] as? [String: Any] ?? [:]).keys)
        var operations: [String: Operation] = [:]
        var references = Set<String>()
        for (path, item) in paths {
            for (method, value) in item as? [String: Any] ?? [:] {
                guard ["get", "put", "post", "patch", "delete"].contains(method),
                    let operation = value as? [String: Any]
                else { continue }
                let responses = operation["responses"] as? [String: Any] ?? [:]
                for case let response as [String: Any] in responses.values {
                    if let reference = response["$ref"] as? String {
                        references.insert(String(reference.split(separator: "/").last ?? ""))
                    }
                }
                let security = operation["security"] as? [Any]
                operations["\(method.uppercased()) \(OpenAPICoverageTests.normalize(path))"] = Operation(
                    path: path, secured: !(security?.isEmpty ?? true), statuses: Set(responses.keys))
            }
        }
        #expect(references.subtracting(shared).isEmpty, "undefined shared responses: \(references.subtracting(shared))")
        return (operations, shared)
    }

    @Test("every operation lists the statuses any route may get, as shared responses")
    func sharedStatuses() throws {
        let (operations, shared) = try Self.operations()
        #expect(operations.count >= 20)
        #expect(
            shared.isSuperset(of: [
                "InvalidRequest", "UriTooLong", "HeaderFieldsTooLarge", "Unavailable", "RateLimited",
            ]))
        for (name, operation) in operations.sorted(by: { $0.key < $1.key }) {
            var needed: Set<String> = ["400", "414", "431", "503"]
            if operation.path.hasPrefix("/v1/") || operation.path.hasPrefix("/beta/") { needed.insert("429") }
            if operation.secured { needed.insert("401") }
            #expect(
                operation.statuses.isSuperset(of: needed),
                "\(name) does not document \(needed.subtracting(operation.statuses).sorted())")
        }
    }

    /// One answer: the operation, the request, its status.
    struct Answer: Sendable {
        var operation: String
        var probe: String
        var status: Int
    }

    @Test("every route, probed over a real connection, answers only statuses its operation documents")
    func probedStatuses() async throws {
        let (operations, _) = try Self.operations()

        // Without rate limits: what each route answers to each kind of request.
        let open = try await Harness(rateLimits: .off)
        let routes = buildRouter(
            hub: open.hub, configuration: open.configuration, identity: open.identity, metrics: nil
        ).routes.filter { !"\($0.path)".hasPrefix("/console") }.map { route in
            (
                method: route.method, path: "\(route.path)",
                operation: "\(route.method.rawValue.uppercased()) \(OpenAPICoverageTests.normalize("\(route.path)"))"
            )
        }
        #expect(routes.count >= 20)
        let userToken = try await open.token(user: "alice")
        let credentials: [(String, String?)] = [
            ("no credentials", nil), ("a wrong token", "not-a-key"), ("the publisher key", Harness.notesKey),
            ("the admin token", Harness.adminToken), ("a user token", userToken),
        ]
        let bodies: [(String, String?)] = [("no body", nil), ("{}", "{}"), ("[]", "[]"), ("not JSON", "{")]
        var answers = try await open.run(.live) { client in
            let port = try #require(client.port)
            var answers: [Answer] = []
            for route in routes {
                let target = Self.target(route.path)
                let method = route.method.rawValue.uppercased()
                for (who, bearer) in credentials {
                    for (what, body) in bodies where body == nil || route.method != .get {
                        let response = try await Self.exchange(port, method, target, bearer: bearer, body: body)
                        answers.append(
                            Answer(operation: route.operation, probe: "\(who), \(what)", status: response.status))
                    }
                }
                let long = try await Self.exchange(port, method, "\(target)?q=\(String(repeating: "a", count: 9000))")
                answers.append(Answer(operation: route.operation, probe: "a 9 KB target", status: long.status))
                let wide = try await Self.exchange(
                    port, method, target, headers: ["X-Big: \(String(repeating: "b", count: 90_000))"])
                answers.append(Answer(operation: route.operation, probe: "a 90 KB head", status: wide.status))
                let bad = try await Self.exchange(port, method, target, headers: ["Bad Field: x"])
                answers.append(Answer(operation: route.operation, probe: "a malformed head", status: bad.status))
            }
            return answers
        }

        // With the client address's budget used up: 429 before any verification.
        var limits = RateLimits.off
        limits.clientIP = RateLimit(1, per: .seconds(3600))
        let limited = try await Harness(rateLimits: limits)
        answers += try await limited.run(.live) { client in
            let port = try #require(client.port)
            var answers: [Answer] = []
            for route in routes {
                for attempt in 1...2 {
                    let response = try await Self.exchange(
                        port, route.method.rawValue.uppercased(), Self.target(route.path), bearer: "not-a-key")
                    answers.append(
                        Answer(
                            operation: route.operation,
                            probe: "a wrong token, attempt \(attempt) over the address's limit",
                            status: response.status))
                }
            }
            return answers
        }
        #expect(answers.contains { $0.status == 429 }, "the limited address got 429")
        #expect(answers.contains { $0.status == 414 } && answers.contains { $0.status == 431 })
        let undocumented = answers.filter { answer in
            let documented = operations[answer.operation]?.statuses ?? []
            return !documented.contains(String(answer.status)) && !documented.contains("default")
        }.map { "\($0.operation) \($0.probe) → \($0.status)" }
        #expect(undocumented.isEmpty, "undocumented statuses:\n\(undocumented.joined(separator: "\n"))")
    }

    /// One request over a connection of its own, byte for byte (``RawHTTP``): the answer as sent.
    static func exchange(
        _ port: Int, _ method: String, _ target: String, bearer: String? = nil, body: String? = nil,
        headers: [String] = []
    ) async throws -> RawHTTPResponse {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"] + headers
        if let bearer { lines.append("Authorization: Bearer \(bearer)") }
        if let body {
            lines += ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"]
        } else if ["POST", "PUT", "PATCH"].contains(method) {
            lines.append("Content-Length: 0")
        }
        return try await RawHTTP.exchange(
            port: port, Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")).utf8))
    }

    /// A route's path with its parameters filled in: the harness's app, user `alice`, IDs `x1`.
    static func target(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            if segment == ":app" { return Harness.notes }
            if segment == ":userId" { return "alice" }
            return segment.hasPrefix(":") ? "x1" : String(segment)
        }.joined(separator: "/")
    }
}
