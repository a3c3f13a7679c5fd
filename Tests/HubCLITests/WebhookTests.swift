import AsyncHTTPClient
import Foundation
import HubEmulators
import HubTesting
import HubWebhooks
import NIOCore
import Testing

/// Issue 42, point 1: an app's webhooks hear about deliveries and state changes, through
/// `hub serve` and a real receiver on port 0 (``WebhookEmulator``), with pushes going to the WNS
/// emulator beside them.
@Suite("hub serve: webhooks")
struct WebhookTests {
    static let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"

    /// A WNS emulator for pushes, a webhook receiver, and a workspace whose hub.yaml points the
    /// app at both (the webhook's request timeout is `timeout`).
    struct Setup {
        let wns: WNSEmulator
        let receiver: WebhookEmulator
        let workspace: URL

        /// - Parameter store: hub.yaml's `store` mapping (the SQLite file by default).
        static func make(
            timeout: String = "2s", events: String? = nil, store: String = "{ sqlite: { path: data/hub.sqlite } }"
        ) async throws -> Setup {
            let wns = try await WNSEmulator.start()
            wns.registerPackage(sid: WebhookTests.sid, secret: "package-secret")
            let receiver = try await WebhookEmulator.start(secret: WebhookSignature.makeSecret())
            let workspace = try makeWorkspace()
            try "package-secret".write(
                to: workspace.appendingPathComponent("wns.secret"), atomically: true, encoding: .utf8)
            try wns.trustRootPEM.write(
                to: workspace.appendingPathComponent("wns-ca.pem"), atomically: true, encoding: .utf8)
            try receiver.secret.write(
                to: workspace.appendingPathComponent("webhook.secret"), atomically: true, encoding: .utf8)
            let types =
                events
                ?? "[delivery.delivered, delivery.failed, endpoint.inactive, notification.read, notification.dismissed]"
            // writeServeConfig's file, with the store, the transports and the app's webhook.
            try writeServeFiles(
                in: workspace,
                yaml: """
                    server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub }
                    store: \(store)
                    transports:
                      wns: { tokenUrl: "\(wns.classicTokenURL)", allowedHosts: ["\(wns.host)"], trustRoots: file:wns-ca.pem }
                      webhooks: { allowedHosts: ["\(receiver.host)"], timeout: \(timeout) }
                    apps:
                      - id: notes.contoso.com
                        platforms:
                          ios: { appIds: [com.contoso.notes] }
                          windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] }
                        identity:
                          - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                        publishers: [ { name: backend, key: file:publisher.key } ]
                        credentials: { wns: { packageSid: "\(WebhookTests.sid)", clientSecret: file:wns.secret } }
                        webhooks:
                          - { url: "\(receiver.url)", events: \(types), secret: file:webhook.secret }
                    """)
            return Setup(wns: wns, receiver: receiver, workspace: workspace)
        }

        func stop() async {
            try? await wns.shutdown()
            try? await receiver.shutdown()
        }
    }

    /// The events the receiver acknowledged (answered 2xx), in arrival order.
    static func acknowledged(_ receiver: WebhookEmulator, type: String? = nil) -> [WebhookEmulator.Received] {
        receiver.received.filter {
            $0.answered && (200..<300).contains($0.status) && (type == nil || $0.type == type)
        }
    }

    @Test(
        "a push's outcome and a read reach the webhook signed, with the receipt's fields; a wrong key does not verify")
    func signedEvents() async throws {
        let setup = try await Setup.make()
        defer { Task { await setup.stop() } }
        let hub = try await RunningHub(directory: setup.workspace)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        let channel = setup.wns.makeChannel(forApp: Self.sid)
        #expect(try await http.registerWNS(user: "alice", endpoint: "a1", channel: channel) == 201)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        #expect(await eventually { !Self.acknowledged(setup.receiver, type: "delivery.delivered").isEmpty })
        let delivered = try #require(Self.acknowledged(setup.receiver, type: "delivery.delivered").first)
        #expect(delivered.problem == nil)
        let data = delivered.data
        #expect(data["appId"] as? String == "notes.contoso.com")
        #expect(data["userId"] as? String == "alice")
        #expect(data["endpointId"] as? String == "a1")
        #expect(data["transport"] as? String == "wns")
        #expect(data["state"] as? String == "delivered")
        #expect(data["kind"] as? String == "tap")
        #expect(data["appNotificationId"] as? String == "n1")
        #expect(data["attempts"] as? Int == 1)
        let body = try JSONSerialization.jsonObject(with: Data(delivered.body.utf8)) as? [String: Any] ?? [:]
        #expect(body["id"] as? String == delivered.id, "webhook-id is the event's ID")
        #expect((body["id"] as? String ?? "").hasPrefix("evt_"))
        #expect(body["timestamp"] is String)
        // The signature is over id, timestamp and body with the secret's key, and no other.
        let key = try #require(WebhookSignature.key(fromSecret: setup.receiver.secret))
        let other = try #require(WebhookSignature.key(fromSecret: WebhookSignature.makeSecret()))
        let signature = WebhookSignature.sign(
            id: delivered.id, timestamp: Int(delivered.timestamp) ?? 0, body: Array(delivered.body.utf8), key: key)
        #expect(
            WebhookSignature.problem(
                id: delivered.id, timestamp: delivered.timestamp, signatures: signature,
                body: Array(delivered.body.utf8), key: other, now: Date()) != nil)

        // The five-line receiver of docs/webhooks.md verifies it (and refuses a changed body).
        let verified = try await PythonScript.run(
            Self.documentedVerifier() + """

                import json, sys
                secret, body = sys.argv[1], sys.argv[5].encode()
                headers = {"webhook-id": sys.argv[2], "webhook-timestamp": sys.argv[3], "webhook-signature": sys.argv[4]}
                print(verify(secret, headers, body), verify(secret, headers, body + b" "))
                """,
            arguments: [
                setup.receiver.secret, delivered.id, delivered.timestamp, delivered.signature, delivered.body,
            ])
        #expect(verified.trimmingCharacters(in: .whitespacesAndNewlines) == "True False", "\(verified)")

        let token = try await http.userToken("alice")
        let read = try await http.request(
            .PATCH, "/v1/apps/notes.contoso.com/me/notifications/n1", bearer: token, json: #"{"readState":"read"}"#)
        #expect(read.status == 200, "\(read.body)")
        #expect(await eventually { !Self.acknowledged(setup.receiver, type: "notification.read").isEmpty })
        let readEvent = try #require(Self.acknowledged(setup.receiver, type: "notification.read").first)
        #expect(readEvent.data["appNotificationId"] as? String == "n1")
        #expect(readEvent.data["readState"] as? String == "read")
        #expect(setup.receiver.received.allSatisfy { $0.problem == nil }, "\(setup.receiver.received)")
    }

    @Test("an event answered 500 twice, then not answered in time, is sent again with the same ID until acknowledged")
    func retriesAfterFailuresAndTimeouts() async throws {
        let setup = try await Setup.make(timeout: "1s")
        defer { Task { await setup.stop() } }
        // Two 500s, then one answer held past the hub's 1 s timeout, then acknowledged.
        setup.receiver.failNext(2, status: 500)
        setup.receiver.stallNext(1, for: .seconds(4))
        let hub = try await RunningHub(directory: setup.workspace)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        #expect(
            try await http.registerWNS(user: "alice", endpoint: "a1", channel: setup.wns.makeChannel(forApp: Self.sid))
                == 201)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        #expect(await eventually(timeout: .seconds(40)) { !Self.acknowledged(setup.receiver).isEmpty })
        let attempts = setup.receiver.received
        let id = try #require(Self.acknowledged(setup.receiver).first?.id)
        let same = attempts.filter { $0.id == id }
        #expect(same.count >= 4, "two 500s, a timeout, then 2xx: \(attempts.map { "\($0.type) \($0.status)" })")
        #expect(same.prefix(2).allSatisfy { $0.status == 500 })
        #expect(Set(same.map(\.body)).count == 1, "every attempt sends the same body")
    }

    @Test("a receiver that stalls every answer does not hold back pushes: all taps go out while its events wait")
    func slowReceiverDoesNotSlowPushes() async throws {
        let setup = try await Setup.make(timeout: "30s")
        defer { Task { await setup.stop() } }
        setup.receiver.stall(.seconds(60))
        let hub = try await RunningHub(directory: setup.workspace)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        let users = (0..<40).map { "user-\($0)" }
        for user in users {
            #expect(
                try await http.registerWNS(user: user, endpoint: "e1", channel: setup.wns.makeChannel(forApp: Self.sid))
                    == 201)
        }
        // First wave: its delivery events take every slot the webhook may hold (half the lane's
        // 16, the host share) with answers that never come.
        for user in users { #expect(try await http.publish(user: user, id: "first") == 201) }
        #expect(await eventually { setup.wns.received.count >= users.count })
        #expect(await eventually { setup.receiver.received.count >= 8 }, "the webhook's slots hold stalled sends")
        // Second wave, measured while the receiver holds every answer.
        let before = setup.wns.received.count
        let start = ContinuousClock.now
        for user in users { #expect(try await http.publish(user: user, id: "second") == 201) }
        let arrived = await eventually(timeout: .seconds(20)) { setup.wns.received.count >= before + users.count }
        let elapsed = ContinuousClock.now - start
        #expect(arrived, "every push of the second wave arrived while the receiver stalled")
        #expect(Self.acknowledged(setup.receiver).isEmpty, "no webhook answer came back meanwhile")
        #expect(elapsed < .seconds(10), "40 publishes and their pushes took \(elapsed) with the receiver stalled")
        print("webhooks: 40 publishes + WNS pushes with a stalled receiver: \(elapsed)")
    }

    @Test(
        "events queued while the receiver fails survive kill -9: after a restart on the same database each is acknowledged"
    )
    func nothingLostAcrossKill() async throws {
        try await Self.nothingLostAcrossKill(store: "{ sqlite: { path: data/hub.sqlite } }")
    }

    @Test(
        "PostgreSQL: events queued while the receiver fails survive kill -9 of hub serve",
        .enabled(if: ProcessInfo.processInfo.environment["HUB_TEST_DATABASE_URL"] != nil))
    func nothingLostAcrossKillOnPostgres() async throws {
        let url = try Self.freshDatabase()
        try await Self.nothingLostAcrossKill(store: "{ postgres: { url: \"\(url)\" } }")
    }

    /// A new database on the server of `HUB_TEST_DATABASE_URL` (scripts/with-postgres), made with
    /// psql; its URL.
    static func freshDatabase() throws -> String {
        let base = try #require(ProcessInfo.processInfo.environment["HUB_TEST_DATABASE_URL"])
        let name = "webhooks_\(UInt32.random(in: 0...UInt32.max))"
        let bin = ProcessInfo.processInfo.environment["HUB_TEST_PGBIN"] ?? "/usr/lib/postgresql/15/bin"
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: bin + "/psql")
        psql.arguments = ["-X", "-q", base, "-c", "CREATE DATABASE \(name)"]
        try psql.run()
        psql.waitUntilExit()
        #expect(psql.terminationStatus == 0, "psql CREATE DATABASE")
        var components = try #require(URLComponents(string: base))
        components.path = "/" + name
        return try #require(components.string)
    }

    static func nothingLostAcrossKill(store: String) async throws {
        let setup = try await Setup.make(store: store)
        defer { Task { await setup.stop() } }
        setup.receiver.failNext(1_000_000, status: 503)
        var hub = try await RunningHub(directory: setup.workspace)
        var http = HubHTTP(base: hub.baseURL)
        let users = (0..<10).map { "user-\($0)" }
        for user in users {
            #expect(
                try await http.registerWNS(user: user, endpoint: "e1", channel: setup.wns.makeChannel(forApp: Self.sid))
                    == 201)
            #expect(try await http.publish(user: user, id: "n-\(user)") == 201)
        }
        // Every user's delivery event was tried (and refused) at least once: they are in the outbox.
        func triedUsers() -> Set<String> {
            Set(
                setup.receiver.received.filter { $0.type == "delivery.delivered" }.compactMap {
                    $0.data["userId"] as? String
                })
        }
        #expect(await eventually { triedUsers() == Set(users) }, "\(triedUsers())")
        let tried = Set(setup.receiver.received.map(\.id))
        hub.signal(SIGKILL)
        #expect(await hub.waitForExit() == -SIGKILL)

        setup.receiver.failNext(0)
        hub = try await RunningHub(directory: setup.workspace)
        defer { hub.signal(SIGTERM) }
        http = HubHTTP(base: hub.baseURL)
        #expect(
            await eventually(timeout: .seconds(60)) {
                tried.isSubset(of: Set(Self.acknowledged(setup.receiver).map(\.id)))
            },
            "every event tried before the kill is acknowledged after the restart")
        let users2 = Set(
            Self.acknowledged(setup.receiver, type: "delivery.delivered").compactMap { $0.data["userId"] as? String })
        #expect(users2 == Set(users))
    }

    @Test("one user's events arrive in the order they happened, through failures; another user's are not held back")
    func orderedPerUser() async throws {
        let setup = try await Setup.make(events: "[notification.read]")
        defer { Task { await setup.stop() } }
        let hub = try await RunningHub(directory: setup.workspace)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        let ids = (0..<12).map { "p\($0)" }
        for id in ids {
            #expect(try await http.publish(user: "alice", id: id) == 201)
            #expect(try await http.publish(user: "bob", id: id) == 201)
        }
        // The first three requests fail: alice's first event is retried while the rest of hers wait.
        setup.receiver.failNext(3, status: 500)
        let alice = try await http.userToken("alice")
        let bob = try await http.userToken("bob")
        for id in ids {
            for token in [alice, bob] {
                let read = try await http.request(
                    .PATCH, "/v1/apps/notes.contoso.com/me/notifications/\(id)", bearer: token,
                    json: #"{"readState":"read"}"#)
                #expect(read.status == 200)
            }
        }
        #expect(await eventually(timeout: .seconds(60)) { Self.acknowledged(setup.receiver).count == 2 * ids.count })
        for user in ["alice", "bob"] {
            let arrivals = setup.receiver.received.filter { $0.data["userId"] as? String == user }
            let acknowledged = arrivals.filter { $0.answered && (200..<300).contains($0.status) }
            #expect(acknowledged.compactMap { $0.data["appNotificationId"] as? String } == ids, "\(user)")
            // Every attempt of an event came before any attempt of the next one.
            let order = arrivals.compactMap {
                ($0.data["appNotificationId"] as? String).flatMap { ids.firstIndex(of: $0) }
            }
            #expect(order == order.sorted(), "\(user): \(order)")
        }
        #expect(setup.receiver.received.contains { $0.status == 500 }, "some attempts failed")
    }

    @Test(
        "hub serve refuses a webhook to a private address not listed exactly; config check names an unknown event's line"
    )
    func refusedConfiguration() async throws {
        let workspace = try makeWorkspace()
        try WebhookSignature.makeSecret().write(
            to: workspace.appendingPathComponent("webhook.secret"), atomically: true, encoding: .utf8)
        try writeServeConfig(
            in: workspace,
            appExtra: """
                    webhooks:
                      - { url: "https://10.1.2.3/hook", events: [delivery.failed], secret: file:webhook.secret }
                """)
        let serve = try await HubProcess.run(["serve", "--config", "hub.yaml"], in: workspace)
        #expect(serve.status != 0)
        #expect(serve.stderr.contains("webhooks[0].url"), "\(serve.stderr)")
        #expect(serve.stderr.contains("private, loopback or reserved address (10.1.2.3)"), "\(serve.stderr)")
        #expect(!serve.stderr.contains("/hook"), "the refusal names the host, not the URL")

        try writeServeConfig(
            in: workspace,
            appExtra: """
                    webhooks:
                      - { url: "https://hooks.contoso.com/hub", events: [delivery.sent], secret: file:webhook.secret }
                """)
        let check = try await HubProcess.run(["config", "check", "--config", "hub.yaml"], in: workspace)
        #expect(check.status != 0)
        let output = check.stdout + check.stderr
        #expect(output.contains("webhooks[0].events[0]' is 'delivery.sent', not an event"), "\(output)")
        #expect(output.contains("hub.yaml:13:"), "the line of the event: \(output)")
    }

    @Test("hub emulate webhook prints the events a hub sends it, signature verified; a forged request is refused 401")
    func emulateWebhook() async throws {
        let workspace = try makeWorkspace()
        let emulator = try await RunningEmulator(
            ["webhook", "--port", "0"], in: workspace, readyWhen: "Received events follow")
        defer { emulator.signal(SIGTERM) }
        let url = try #require(emulator.value(after: "Webhook receiver on ", in: emulator.output))
        let secret = try #require(emulator.value(after: "secret   ", in: emulator.output))
        let host = try #require(emulator.value(after: "allowedHosts: [\"", in: emulator.output)).prefix { $0 != "\"" }
        try secret.write(to: workspace.appendingPathComponent("webhook.secret"), atomically: true, encoding: .utf8)
        try writeServeConfig(
            in: workspace, extra: #"transports: { webhooks: { allowedHosts: ["\#(host)"] } }"#,
            appExtra: """
                    webhooks:
                      - { url: "\(url)", events: [notification.read], secret: file:webhook.secret }
                """)
        let hub = try await RunningHub(directory: workspace)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        #expect(try await http.publish(user: "alice", id: "n1") == 201)
        let read = try await http.request(
            .PATCH, "/v1/apps/notes.contoso.com/me/notifications/n1", bearer: try await http.userToken("alice"),
            json: #"{"readState":"read"}"#)
        #expect(read.status == 200)
        #expect(try await emulator.waitFor("signature ok -> 204"), "\(emulator.output)")
        #expect(emulator.output.contains("notification.read evt_"))

        var forged = HTTPClientRequest(url: url)
        forged.method = .POST
        forged.headers.add(name: "webhook-id", value: "evt_forged")
        forged.headers.add(name: "webhook-timestamp", value: String(Int(Date().timeIntervalSince1970)))
        forged.headers.add(name: "webhook-signature", value: "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        forged.body = .bytes(ByteBuffer(string: #"{"type":"delivery.failed"}"#))
        let answer = try await HTTPClient.shared.execute(forged, timeout: .seconds(10))
        #expect(answer.status.code == 401)
        #expect(try await emulator.waitFor("NOT VERIFIED (no v1 signature matches the body)"), "\(emulator.output)")
    }

    /// The Python block of docs/webhooks.md's "Verifying, in five lines".
    static func documentedVerifier() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(
            contentsOf: root.appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```python\n"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }
}
