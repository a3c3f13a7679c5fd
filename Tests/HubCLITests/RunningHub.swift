import AsyncHTTPClient
import Foundation
import HubEmulators
import HubTesting
import NIOCore
import NIOHTTP1
import Testing

/// A `hub serve` process on port 0, for tests of the daemon's life cycle.
typealias RunningHub = ListeningProcess

extension ListeningProcess {
    /// Starts `hub serve` in `directory` and waits until it listens.
    /// - Parameter command: the whole argument list instead of `serve --config hub.yaml` + `arguments`.
    convenience init(
        directory: URL, arguments: [String] = [], environment: [String: String] = [:], command: [String]? = nil
    ) async throws {
        try await self.init(
            HubProcess.executable, command ?? (["serve", "--config", "hub.yaml"] + arguments), in: directory,
            environment: environment)
    }
}

/// Writes a hub.yaml with one app, an admin token, an HS256 identity and a publisher key.
/// - Parameters:
///   - extra: top-level hub.yaml lines.
///   - appExtra: lines of the app's mapping, indented by four spaces (credentials, for example).
///   - server: more entries of the `server` flow mapping, such as `connections: { max: 3 }`.
func writeServeConfig(in directory: URL, extra: String = "", appExtra: String = "", server: String = "") throws {
    let yaml = """
        server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub\(server.isEmpty ? "" : ", " + server) }
        store: { sqlite: { path: data/hub.sqlite } }
        \(extra)
        apps:
          - id: notes.contoso.com
            platforms:
              ios: { appIds: [com.contoso.notes] }
              windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] }
            identity:
              - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
            publishers: [ { name: backend, key: file:publisher.key } ]
        \(appExtra)
        """
    try writeServeFiles(in: directory, yaml: yaml)
}

/// Writes `yaml` as hub.yaml, with the admin token (`file:admin.token`) and the HS256 user-token
/// secret (`file:user.secret`) that ``HubHTTP`` uses beside it.
func writeServeFiles(in directory: URL, yaml: String) throws {
    try "test-admin-token-0123456789".write(
        to: directory.appendingPathComponent("admin.token"), atomically: true, encoding: .utf8)
    try "test-user-token-secret-0123456789".write(
        to: directory.appendingPathComponent("user.secret"), atomically: true, encoding: .utf8)
    try yaml.write(to: directory.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
}

/// An HTTP client for the hub under test.
struct HubHTTP {
    let base: String
    let publisherKey = "fixture-publisher-key-0123456789"
    let adminToken = "test-admin-token-0123456789"

    func userToken(_ user: String) async throws -> String {
        try await TestUserClaims(user: user, issuer: "https://login.contoso.com", audience: "contoso-notes")
            .signed(secret: "test-user-token-secret-0123456789")
    }

    @discardableResult
    func request(
        _ method: HTTPMethod, _ path: String, bearer: String, json: String? = nil, timeout: Int64 = 30,
        headers: [(String, String)] = []
    )
        async throws -> (status: Int, body: String)
    {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(timeout))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    func publish(user: String, id: String) async throws -> Int {
        try await request(
            .POST, "/v1/apps/notes.contoso.com/users/\(user)/notifications", bearer: publisherKey,
            json: #"{"appNotificationId":"\#(id)","payload":{"rawContent":"\#(id)"}}"#
        ).status
    }

    func registerPolling(user: String, endpoint: String) async throws -> Int {
        try await request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/\(endpoint)", bearer: try await userToken(user),
            json: #"{"platform":"windows","appId":"Contoso.Notes_8wekyb3d8bbwe","transport":"polling"}"#
        ).status
    }

    func registerWNS(user: String, endpoint: String, channel: String) async throws -> Int {
        try await request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/\(endpoint)", bearer: try await userToken(user),
            json:
                #"{"platform":"windows","appId":"Contoso.Notes_8wekyb3d8bbwe","transport":"wns","token":"\#(channel)"}"#
        ).status
    }

    /// The app's delivery statistics: pending count and delivered count.
    func statistics() async throws -> (pending: Int, delivered: Int) {
        let body = try await request(.GET, "/v1/apps/notes.contoso.com/statistics", bearer: adminToken).body
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
        let finished = object["finished"] as? [String: [String: Int]] ?? [:]
        return (object["pending"] as? Int ?? -1, finished.values.reduce(0) { $0 + ($1["delivered"] ?? 0) })
    }

    /// Every notification id in the user's feed, following cursors to the end.
    func feedIDs(user: String) async throws -> [String] {
        var ids: [String] = []
        var cursor = ""
        let token = try await userToken(user)
        while true {
            let path = "/v1/apps/notes.contoso.com/me/feed?limit=500" + (cursor.isEmpty ? "" : "&cursor=\(cursor)")
            let body = try await request(.GET, path, bearer: token).body
            let page = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
            let changes = page["changes"] as? [[String: Any]] ?? []
            ids += changes.compactMap { $0["appNotificationId"] as? String }
            cursor = page["cursor"] as? String ?? ""
            if page["hasMore"] as? Bool != true { return ids }
        }
    }
}

extension ListeningProcess {
    /// `hub serve` in a fresh workspace (``makeWorkspace()``) with the hub.yaml of
    /// ``writeServeConfig(in:extra:appExtra:server:)``, once it listens; the workspace is its `directory`.
    static func served(extra: String = "", appExtra: String = "", server: String = "") async throws -> ListeningProcess
    {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace, extra: extra, appExtra: appExtra, server: server)
        return try await ListeningProcess(directory: workspace)
    }
}
