import Foundation
import HubServer
import Testing
import Yams

@Suite("OpenAPI document")
struct OpenAPICoverageTests {
    /// `/v1/apps/:app/users/:userId` and `/v1/apps/{app}/users/{userId}` both become `/v1/apps/{}/users/{}`.
    static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) ? "{}" : String(segment)
        }.joined(separator: "/")
    }

    @Test("every route is documented in openapi.yaml and every documented operation is a route")
    func routesMatchDocument() async throws {
        let harness = try await Harness()
        let router = buildRouter(
            hub: harness.hub, configuration: harness.configuration, identity: harness.identity, metrics: nil)
        // The console's HTML pages (`/console…`) are for browsers, not part of the API.
        let served = Set(
            router.routes.filter { !"\($0.path)".hasPrefix("/console") }.map {
                "\($0.method.rawValue.uppercased()) \(Self.normalize("\($0.path)"))"
            })
        #expect(
            router.routes.contains { Self.normalize("\($0.path)") == "/console/apps/{}/send" && $0.method == .post })

        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/HubServer/openapi.yaml")
        let document = try #require(try Yams.load(yaml: String(contentsOf: file, encoding: .utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        let methods = ["get", "put", "post", "patch", "delete", "head", "options"]
        var documented = Set<String>()
        for (path, item) in paths {
            for method in methods where (item as? [String: Any])?[method] != nil {
                documented.insert("\(method.uppercased()) \(Self.normalize(path))")
            }
        }
        #expect(served.count >= 20, "\(served.sorted())")
        #expect(
            served.subtracting(documented).isEmpty, "undocumented routes: \(served.subtracting(documented).sorted())")
        #expect(
            documented.subtracting(served).isEmpty,
            "documented but not served: \(documented.subtracting(served).sorted())")
    }

    @Test("the document is served at /openapi.yaml and is the file in the repository")
    func servedDocument() async throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/HubServer/openapi.yaml")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("openapi: 3.1"))
        #expect(text.contains("application/problem+json"))
    }
}
