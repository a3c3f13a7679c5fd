import Foundation
import HubCore
import HubEmulators
import HubTesting
import Testing

@testable import HubAPNS

@Suite("APNs requests: every header over the wire, per delivery kind and push type")
struct APNSHeaderTests {
    @Test("a shoulder tap is a background push: priority 5, expiration 0, bundle topic, hub keys only")
    func shoulderTap() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(1)
            #expect(await harness.transport.send(harness.delivery(.shoulderTap, token: token)) == .accepted)
            let request = try #require(harness.emulator.requests(to: token).first)
            #expect(request.header(":method") == "POST")
            #expect(request.header(":path") == "/3/device/\(token)")
            #expect(request.header(":authority") == "127.0.0.1:\(harness.emulator.port)")
            #expect(request.header("apns-push-type") == "background")
            #expect(request.header("apns-topic") == APNSHarness.bundleID)
            #expect(request.header("apns-priority") == "5")
            #expect(request.header("apns-expiration") == "0")
            #expect(request.header("apns-collapse-id") == nil)
            let id = try #require(request.header("apns-id"))
            #expect(id == id.lowercased() && UUID(uuidString: id) != nil)
            #expect(request.header("authorization")?.hasPrefix("bearer ") == true)
            let json = try #require(request.json)
            #expect(
                json
                    == .object([
                        "aps": .object(["content-available": .integer(1)]),
                        "hub": .object(["app": .string(APNSHarness.app.id), "v": .integer(42)]),
                    ]))
        }
    }

    @Test("a visible delivery is an alert: priority 10, the notification's expiry, collapse and thread IDs")
    func visible() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(2)
            let expires = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 2 * 86_400).rounded(.down))
            let notification = APNSHarness.notification(expires: expires)
            let outcome = await harness.transport.send(
                harness.delivery(.visible, token: token, notification: notification))
            #expect(outcome == .accepted)
            let request = try #require(harness.emulator.requests(to: token).first)
            #expect(request.header("apns-push-type") == "alert")
            #expect(request.header("apns-priority") == "10")
            #expect(request.header("apns-topic") == APNSHarness.bundleID)
            #expect(request.header("apns-expiration") == String(Int64(expires.timeIntervalSince1970)))
            #expect(request.header("apns-collapse-id") == "meeting-42")
            let aps = try #require(request.json?["aps"])
            #expect(aps["alert"]?["title"] == .string("Meeting moved"))
            #expect(aps["alert"]?["body"] == .string("Now at 3 pm"))
            #expect(aps["thread-id"] == .string("calendar"))
            #expect(aps["sound"] == .string("default"))
            #expect(request.json?["hub"]?["id"] == .string("n-1"))
        }
    }

    @Test("a low-priority fallback goes at priority 5 without sound; a long appNotificationId still collapses")
    func lowPriorityFallback() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(3)
            let notification = APNSHarness.notification(
                priority: .low, appNotificationId: String(repeating: "long-id-", count: 20))
            let outcome = await harness.transport.send(
                harness.delivery(.fallback, token: token, notification: notification))
            #expect(outcome == .accepted)
            let request = try #require(harness.emulator.requests(to: token).first)
            #expect(request.header("apns-priority") == "5")
            #expect(request.header("apns-push-type") == "alert")
            #expect((request.header("apns-collapse-id")?.utf8.count ?? 99) <= 64)
            #expect(request.json?["aps"]?["sound"] == nil)
        }
    }

    @Test("an alert's expiration is capped at 30 days ahead; an expired notification gets 0 (try once)")
    func expirationCap() async throws {
        let clock = ManualClock()
        try await APNSHarness.with(emulator: { $0.now = { clock.now } }, transport: { $0.now = { clock.now } }) {
            harness in
            let now = Int64(clock.now.timeIntervalSince1970)
            let far = APNSHarness.notification(expires: clock.now.addingTimeInterval(90 * 86_400))
            #expect(
                await harness.transport.send(harness.delivery(.visible, token: APNSHarness.token(7), notification: far))
                    == .accepted)
            let capped = harness.emulator.requests(to: APNSHarness.token(7)).first?.header("apns-expiration")
            #expect(capped == String(now + 30 * 86_400))
            let past = APNSHarness.notification(expires: clock.now.addingTimeInterval(-60))
            #expect(
                await harness.transport.send(
                    harness.delivery(.visible, token: APNSHarness.token(8), notification: past)) == .accepted)
            #expect(harness.emulator.requests(to: APNSHarness.token(8)).first?.header("apns-expiration") == "0")
        }
    }

    @Test("a visible delivery without visualContent is sent as a background push")
    func visibleWithoutVisual() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(4)
            var notification = APNSHarness.notification()
            notification.payload = NotificationPayload(rawContent: "{}")
            #expect(
                await harness.transport.send(harness.delivery(.visible, token: token, notification: notification))
                    == .accepted)
            #expect(harness.emulator.requests(to: token).first?.header("apns-push-type") == "background")
        }
    }

    @Test("a VoIP push goes to the .voip topic and may be 5120 bytes")
    func voip() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(5)
            let payload = APNSPayload.voip(
                APNSVoIPPayload(custom: ["call": .string(String(repeating: "c", count: 4500))]))
            #expect(await harness.send(token, payload: payload) == .accepted)
            let request = try #require(harness.emulator.requests(to: token).first)
            #expect(request.header("apns-topic") == APNSHarness.bundleID + ".voip")
            #expect(request.header("apns-push-type") == "voip")
            #expect(request.payload.count > 4096)
        }
    }

    @Test("each endpoint goes to the server of its environment")
    func environments() async throws {
        var development = APNSEmulator.Configuration()
        development.environment = .development
        let sandbox = try await APNSEmulator.start(development, authority: nil)
        try await APNSHarness.with(transport: { _ in }) { harness in
            sandbox.register(harness.key, bundleIDs: [APNSHarness.bundleID])
            var configuration = harness.transport.configuration
            configuration.development = .init(host: "127.0.0.1", port: sandbox.port)
            configuration.trustRoots = .pem(harness.emulator.trustRootPEM + "\n" + sandbox.trustRootPEM)
            let transport = APNSTransport(configuration: configuration, logger: harness.logs.logger)
            let token = APNSHarness.token(6)
            #expect(
                await transport.send(harness.delivery(.shoulderTap, token: token, environment: .development))
                    == .accepted)
            #expect(
                await transport.send(harness.delivery(.shoulderTap, token: token, environment: .production))
                    == .accepted)
            #expect(sandbox.requests(to: token).count == 1)
            #expect(harness.emulator.requests(to: token).count == 1)
            await transport.shutdown(grace: .milliseconds(100))
        }
        await sandbox.shutdown()
    }

    @Test("registration checks the token's form and that the app has APNs credentials")
    func registration() throws {
        let transport = APNSTransport(logger: LogCapture().logger)
        var app = APNSHarness.app
        let endpoint = { (token: String) in
            Endpoint(
                id: "e", appId: app.id, userId: "u", platform: .ios, platformAppId: APNSHarness.bundleID,
                transport: .apns, token: token, registeredAt: Date())
        }
        #expect(transport.problem(registering: endpoint("abcd"), for: app)?.contains("credentials") == true)
        app.credentials.apns = APNSTestKey().credentials()
        #expect(transport.problem(registering: endpoint("ab12CD"), for: app) == nil)
        #expect(transport.problem(registering: endpoint("xyz1"), for: app) != nil)
        #expect(transport.problem(registering: endpoint("abc"), for: app) != nil)
    }

    @Test("header values an embedder passes in are checked before sending; a collapse ID is made valid")
    func headerValues() async throws {
        try await APNSHarness.with { harness in
            let token = APNSHarness.token(6)
            var request = harness.request(token)
            request.bundleID = "com.example.app\r\nx-injected: 1"
            var outcome = await harness.transport.send(request, credentials: harness.credentials)
            #expect(outcome.reasonText.contains("apns-topic holds a control character"), "\(outcome)")
            request = harness.request(token)
            request.apnsID = " 0c1d8f2e-0000-4000-8000-000000000000"
            outcome = await harness.transport.send(request, credentials: harness.credentials)
            #expect(outcome.reasonText.contains("apns-id starts or ends with whitespace"), "\(outcome)")
            request = harness.request("zz" + String(token.dropFirst(2)))
            outcome = await harness.transport.send(request, credentials: harness.credentials)
            #expect(outcome.reasonText.contains("hex"), "\(outcome)")
            #expect(harness.emulator.requests.isEmpty, "nothing invalid reached the wire")

            // An appNotificationId may hold anything; its collapse ID is still a valid header value.
            let identifier = " line one\nline two\u{7F}"
            let collapseID = APNSCollapseID(identifier).value
            #expect(collapseID.hasPrefix("line oneline two~"), "\(collapseID)")
            let isValid = collapseID.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F }
            #expect(isValid)
            #expect(APNSCollapseID(identifier) != APNSCollapseID(" line one\nline two\u{7E}"))
            #expect(APNSCollapseID("meeting 42").value == "meeting 42")
            let notification = APNSHarness.notification(appNotificationId: identifier)
            #expect(
                await harness.transport.send(harness.delivery(.visible, token: token, notification: notification))
                    == .accepted)
            #expect(harness.emulator.requests(to: token).first?.header("apns-collapse-id") == collapseID)
        }
    }

    @Test("HPACK as Apple asks: apns-id, apns-expiration, apns-collapse-id indexed only the first time per connection")
    func hpackIndexing() async throws {
        try await APNSHarness.with(transport: { $0.maxConnections = 1 }) { harness in
            let token = APNSHarness.token(7)
            for id in ["first", "second", "third"] {
                let notification = APNSHarness.notification(appNotificationId: id)
                let outcome = await harness.transport.send(
                    harness.delivery(.visible, token: token, notification: notification))
                #expect(outcome == .accepted)
            }
            let requests = harness.emulator.requests(to: token)
            try #require(requests.count == 3)
            #expect(Set(requests.map(\.connectionID)).count == 1, "one connection")
            // :path and authorization are never indexed; the three per-request fields only at first.
            #expect(requests[0].unindexedHeaders == [":path", "authorization"])
            // HTTP/2 frames carry the length; APNs does not ask for content-length.
            #expect(requests.allSatisfy { $0.header("content-length") == nil })
            for request in requests.dropFirst() {
                #expect(
                    request.unindexedHeaders == [
                        ":path", "apns-expiration", "apns-collapse-id", "apns-id", "authorization",
                    ])
            }
        }
    }

    @Test("apns-id: lowercase version-4 UUIDs, distinct, that Foundation reads back")
    func requestIDs() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = APNSRequestID.next()
            #expect(id.count == 36 && id == id.lowercased(), "\(id)")
            #expect(UUID(uuidString: id) != nil, "\(id)")
            let characters = Array(id)
            #expect(characters[14] == "4", "version 4: \(id)")
            #expect("89ab".contains(characters[19]), "RFC 4122 variant: \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
        #expect(
            RandomID.uuidText(high: 0x0123_4567_89AB_4DEF, low: 0x8123_4567_89AB_CDEF)
                == "01234567-89ab-4def-8123-456789abcdef")
    }
}
