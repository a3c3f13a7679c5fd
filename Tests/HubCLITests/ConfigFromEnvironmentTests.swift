import Foundation
import HubTesting
import Testing

@Suite("hub.yaml keys from the environment, end to end")
struct ConfigFromEnvironmentTests {
    @Test("HUB_SERVER_LISTEN moves hub serve to another port; HUB_SERVER_ADMIN_TOKEN guards the admin routes")
    func serveListens() async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let config = workspace.appendingPathComponent("hub.yaml")
        try read(config).replacingOccurrences(of: "127.0.0.1:0", with: "127.0.0.1:1")
            .write(to: config, atomically: true, encoding: .utf8)
        let port = try FreePort.pick()
        let hub = try await RunningHub(
            directory: workspace,
            environment: ["HUB_SERVER_LISTEN": "127.0.0.1:\(port)", "HUB_SERVER_ADMIN_TOKEN": "env-admin-token-123"])
        #expect(hub.port == port)
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.request(.GET, "/v1/apps", bearer: "env-admin-token-123").status == 200)
        #expect(try await http.request(.GET, "/v1/apps", bearer: http.adminToken).status == 401)
        #expect(!hub.log.contains("env-admin-token-123"))
    }

    @Test(
        "dispatcher.concurrency and dispatcher.lanes set the lanes hub serve runs",
        arguments: [
            (["HUB_DISPATCHER_CONCURRENCY": "33"], "polling:33"),
            (["HUB_DISPATCHER_CONCURRENCY": "33", "HUB_DISPATCHER_LANES_POLLING": "7"], "polling:7"),
        ])
    func dispatcherLanes(environment: [String: String], lane: String) async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let hub = try await RunningHub(directory: workspace, environment: environment)
        #expect(await eventually { hub.log.contains("dispatcher started") }, "\(hub.log)")
        let line = try #require(hub.log.split(separator: "\n").first { $0.contains("dispatcher started") })
        #expect(line.contains("lanes=\(lane),other:4"), "\(line)")
    }

    @Test("hub config print shows the effective configuration with secrets redacted")
    func print() async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace)
        let output = try await HubProcess.run(
            ["config", "print"], in: workspace,
            environment: [
                "HUB_SERVER_ADMIN_TOKEN": "printed-never-0123", "HUB_LOGGING_LEVEL": "debug",
                "HUB_STORE": "{ postgres: { url: \"postgres://hub:hunter2@127.0.0.1/hub\" } }",
            ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("# server.adminToken from HUB_SERVER_ADMIN_TOKEN"))
        #expect(output.stdout.contains("level: debug"))
        #expect(output.stdout.contains("secret: file:user.secret"))
        #expect(!output.stdout.contains("printed-never-0123") && !output.stderr.contains("printed-never-0123"))
        #expect(!output.stdout.contains("hunter2") && !output.stderr.contains("hunter2"))
        #expect(output.stdout.contains("url: <redacted>"))
        let typo = try await HubProcess.run(
            ["config", "check"], in: workspace, environment: ["HUB_LOGGING_LEVL": "debug"])
        #expect(typo.status == 1)
        #expect(typo.stderr.contains("did you mean HUB_LOGGING_LEVEL?"), "\(typo.stderr)")
    }
}
