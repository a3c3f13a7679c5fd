import AsyncHTTPClient
import Foundation
import HubEmulators
import HubTesting
import Testing

@Suite("hub serve")
struct ServeCommandTests {
    @Test("the sample hub.yaml starts on a fresh checkout, answers health checks, and SIGTERM exits 0")
    func sampleStarts() async throws {
        let workspace = try makeWorkspace()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sample = try String(contentsOf: root.appendingPathComponent("hub.yaml"), encoding: .utf8)
        try sample.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:0")
            .write(to: workspace.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("examples"), to: workspace.appendingPathComponent("examples"))
        let hub = try await RunningHub(directory: workspace)
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.request(.GET, "/healthz", bearer: "").status == 200)
        #expect(try await http.request(.GET, "/readyz", bearer: "").status == 200)
        let metrics = try await http.request(.GET, "/metrics", bearer: "")
        #expect(metrics.status == 200)
        let publisherKey = try String(
            contentsOf: root.appendingPathComponent("examples/dev/publisher.key"), encoding: .utf8)
        let publish = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: publisherKey,
            json: #"{"appNotificationId":"hello","payload":{"visualContent":{"title":"Hello"}}}"#)
        #expect(publish.status == 201, "\(publish.body)")
        // Quiet start: one info line per transport, no warnings.
        for line in [
            "polling transport enabled", "apns transport off: no app has credentials.apns",
            "fcm transport off: no app has credentials.fcm", "wns transport off: no app has credentials.wns",
            "unifiedpush transport off: hub.yaml has no transports.unifiedpush",
            "webhooks transport off: no app has webhooks",
        ] {
            #expect(hub.log.contains(line), "\(line)\n\(hub.log)")
        }
        #expect(!hub.log.contains(" warning "), "\(hub.log)")
        let version = try await HubProcess.run(["--version"], in: workspace).stdout.trimmingCharacters(in: .newlines)
        #expect(hub.log.contains("[HubCLI] hub \(version)"), "\(hub.log)")
        #expect(!hub.log.contains(publisherKey))
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0, "\(hub.log)")
        #expect(hub.log.contains("hub stopped"))
    }

    @Test("SIGTERM ends a waiting long-poll, drains, and exits 0; metrics count publishes and queue depth")
    func gracefulShutdown() async throws {
        let hub = try await RunningHub.served()
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.registerPolling(user: "alice", endpoint: "tablet") == 201)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let metrics = try await http.request(.GET, "/metrics", bearer: "").body
        #expect(metrics.contains("hub_publishes_total"))
        #expect(metrics.contains("hub_outbox_pending"))
        let token = try await http.userToken("alice")
        let cursor = try await http.cursor(user: "alice", token: token)
        let longPoll = Task {
            try await http.request(.GET, "/v1/apps/notes.contoso.com/me/feed?cursor=\(cursor)&wait=60", bearer: token)
        }
        // The long-poll is parked in the hub (not refused, not answered) before the signal.
        #expect(await http.waitForWaiters(timeout: .seconds(20)) { $0 == 1 })
        let sent = Date()
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0, "\(hub.log)")
        let answer = try await longPoll.value
        #expect(answer.status == 503, "\(answer.body)")
        #expect(Date().timeIntervalSince(sent) < 15, "the long-poll must not hold the shutdown for its full wait")
    }

    @Test(
        "killed with publishes pending, the hub restarts on the same SQLite file, loses nothing, and finishes the deliveries"
    )
    func killAndRestart() async throws {
        // Windows endpoints tapped through WNS (the emulator): their taps go through the durable
        // outbox (polling endpoints get none).
        let wns = try await WNSEmulator.start()
        defer { Task { try? await wns.shutdown() } }
        let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"
        wns.registerPackage(sid: sid, secret: "package-secret")
        let workspace = try makeWorkspace()
        try "package-secret".write(
            to: workspace.appendingPathComponent("wns.secret"), atomically: true, encoding: .utf8)
        try wns.trustRootPEM.write(
            to: workspace.appendingPathComponent("wns-ca.pem"), atomically: true, encoding: .utf8)
        try writeServeConfig(
            in: workspace,
            appExtra: #"    credentials: { wns: { packageSid: "\#(sid)", clientSecret: file:wns.secret } }"#)
        let environment = [
            "HUB_TRANSPORTS_WNS_TOKEN_URL": wns.classicTokenURL, "HUB_TRANSPORTS_WNS_ALLOWED_HOSTS": wns.host,
            "HUB_TRANSPORTS_WNS_TRUST_ROOTS": workspace.appendingPathComponent("wns-ca.pem").path,
        ]
        // An API-only instance enqueues deliveries without sending them: they are pending when it dies.
        var hub = try await RunningHub(directory: workspace, arguments: ["--no-dispatch"], environment: environment)
        var http = HubHTTP(base: hub.baseURL)
        for (user, endpoint) in [("alice", "a1"), ("alice", "a2"), ("bob", "b1")] {
            #expect(
                try await http.registerWNS(user: user, endpoint: endpoint, channel: wns.makeChannel(forApp: sid)) == 201
            )
        }
        for index in 0..<40 {
            #expect(try await http.publish(user: index.isMultiple(of: 2) ? "alice" : "bob", id: "p\(index)") == 201)
        }
        #expect(try await http.statistics().pending > 0)
        hub.signal(SIGKILL)
        #expect(await hub.waitForExit() != nil)

        #expect(wns.received.isEmpty)

        // A dispatching instance on the same file picks the outbox up.
        hub = try await RunningHub(directory: workspace, environment: environment)
        http = HubHTTP(base: hub.baseURL)
        let drained = try await eventually { try await http.statistics().pending == 0 }
        #expect(drained)
        #expect(try await http.statistics().delivered >= 3)
        #expect(Set(wns.received.map(\.channelID)).count == 3, "each endpoint was tapped")
        #expect(
            Set(try await http.feedIDs(user: "alice")) == Set((0..<40).filter { $0.isMultiple(of: 2) }.map { "p\($0)" })
        )

        // Killed in the middle of dispatching: every accepted publish is still there after a restart.
        let client = http
        let accepted = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<200 {
                group.addTask { try await client.publish(user: "alice", id: "q\(index)") == 201 ? "q\(index)" : nil }
            }
            var ids: [String] = []
            for try await id in group { if let id { ids.append(id) } }
            return ids
        }
        hub.signal(SIGKILL)
        #expect(await hub.waitForExit() != nil)
        hub = try await RunningHub(directory: workspace, environment: environment)
        http = HubHTTP(base: hub.baseURL)
        let feed = Set(try await http.feedIDs(user: "alice"))
        #expect(accepted.count == 200)
        #expect(Set(accepted).isSubset(of: feed))
        #expect(try await eventually { try await http.statistics().pending == 0 })
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }

    @Test("logging.format json writes one JSON object per line")
    func jsonLogs() async throws {
        let hub = try await RunningHub.served(extra: "logging: { format: json }")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
        let lines = hub.log.split(separator: "\n").filter { !$0.isEmpty }
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["message"] != nil, "not a JSON log line: \(line)")
        }
    }
}
