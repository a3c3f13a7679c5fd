import Foundation
import HubEmulators
import HubTesting
import Testing

/// `hub serve` with issue 45's Web Push additions, through HTTP and the emulators: declarative
/// push messages for Safari's push service (by origin) and for subscriptions that ask for them,
/// and UnifiedPush endpoints checked at their distributor before use.
@Suite("hub serve: Declarative Web Push and UnifiedPush", .serialized)
struct ServeDeclarativeUnifiedPushTests {
    static let app = "/v1/apps/notes.contoso.com"

    @Test("visible pushes to Apple's push service and to declarative subscriptions are declarative; others classic")
    func declarativeWebPush() async throws {
        // Two push services: "apple" stands for web.push.apple.com (on the declarative list by
        // hub.yaml, as *.push.apple.com is by default), "other" for any other browser's.
        let apple = try await WebPushEmulator.start()
        defer { Task { try? await apple.shutdown() } }
        let other = try await WebPushEmulator.start(authority: apple.authority)
        defer { Task { try? await other.shutdown() } }
        let (workspace, key) = try makeWebPushWorkspace(trusting: apple)
        try writeConfig(
            in: workspace,
            transports: """
                  webpush:
                    allowedHosts: ["\(apple.host)", "\(other.host)"]
                    declarativeHosts: ["\(apple.host)"]
                    trustRoots: file:webpush-ca.pem
                """)
        let hub = try await RunningHub(directory: workspace)
        let http = HubHTTP(base: hub.baseURL)
        let token = try await http.userToken("alice")

        let safari = apple.makeSubscription(applicationServerKey: key.publicKey)
        let asked = other.makeSubscription(applicationServerKey: key.publicKey)
        let chrome = other.makeSubscription(applicationServerKey: key.publicKey)
        for (id, subscription, declarative) in [
            ("safari", safari, nil), ("asked", asked, true), ("chrome", chrome, nil),
        ] {
            let registered = try await http.request(
                .PUT, "\(Self.app)/me/endpoints/\(id)", bearer: token,
                json: Self.web(subscription.json, declarative: declarative))
            #expect(registered.status == 201, "\(id): \(registered.body)")
            // The endpoint resource says what the device asked for, and nothing when it did not.
            #expect(registered.body.contains(#""declarative":true"#) == (declarative == true), "\(registered.body)")
        }
        let notBoolean = try await http.request(
            .PUT, "\(Self.app)/me/endpoints/odd", bearer: token,
            json: String(Self.web(chrome.json, declarative: nil).dropLast()) + #","declarative":"yes"}"#)
        #expect(notBoolean.status == 400 && notBoolean.body.contains("declarative"), "\(notBoolean.body)")

        let publish = #"""
            {"appNotificationId":"lunch","deliveryMode":"visible",
             "payload":{"visualContent":{"title":"Lunch?","body":"12:30 at the usual place","badge":3}}}
            """#
        let published = try await http.request(
            .POST, "\(Self.app)/users/alice/notifications", bearer: http.publisherKey, json: publish)
        #expect(published.status == 201, "\(published.body)")
        let arrived = await eventually {
            !apple.received(by: safari).isEmpty && !other.received(by: asked).isEmpty
                && !other.received(by: chrome).isEmpty
        }
        #expect(arrived, "\(hub.log)")
        #expect(apple.refusals.isEmpty && other.refusals.isEmpty, "\(apple.refusals) \(other.refusals)")

        // The emulator read both as valid declarative push messages; the hub's fields are in `data`.
        for message in [apple.received(by: safari).first, other.received(by: asked).first] {
            let message = try #require(message)
            #expect(message.isDeclarative, "\(message.text)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: Any])
            #expect(json["web_push"] as? Int == 8030)
            #expect(json["app_badge"] as? Int == 3)
            let notification = try #require(json["notification"] as? [String: Any])
            #expect(notification["title"] as? String == "Lunch?")
            #expect(notification["body"] as? String == "12:30 at the usual place")
            #expect(notification["navigate"] as? String == "https://notes.contoso.com/")
            #expect(notification["tag"] as? String == "lunch")
            let data = try #require(notification["data"] as? [String: String])
            #expect(data["hub"] == "visible" && data["app"] == "notes.contoso.com" && data["id"] != nil)
        }
        // Another browser's subscription that did not ask keeps the classic payload.
        let classic = try #require(other.received(by: chrome).first)
        #expect(!classic.isDeclarative)
        let fields = try JSONSerialization.jsonObject(with: Data(classic.plaintext)) as? [String: String]
        #expect(fields?["hub"] == "visible" && fields?["title"] == "Lunch?", "\(classic.text)")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }

    @Test(
        "a UnifiedPush endpoint must pass the check at registration; then it gets pushes and is dropped on 410 and 404")
    func unifiedPush() async throws {
        let distributor = try await WebPushEmulator.start(distributor: true)
        defer { Task { try? await distributor.shutdown() } }
        let (workspace, key) = try makeWebPushWorkspace(trusting: distributor, trustRoot: "up-ca.pem")
        try writeConfig(
            in: workspace,
            transports: """
                  unifiedpush: { allowedHosts: ["\(distributor.host)"], trustRoots: file:up-ca.pem }
                """)
        let hub = try await RunningHub(directory: workspace)
        let http = HubHTTP(base: hub.baseURL)
        let token = try await http.userToken("alice")
        // The distributor was given the app's VAPID key: it checks the hub's token.
        let phone = distributor.makeSubscription(applicationServerKey: key.publicKey)

        // Each failing check is a 400 that says which check failed.
        for (answer, expected) in [
            (WebPushEmulator.CheckAnswer.status(404), "answered 404"),
            (.redirect("https://example.com/elsewhere"), "redirect"),
            (.body(#"{"ok":true}"#), "not a UnifiedPush endpoint"),
            (.body(#"{"unifiedpush":{"version":2}}"#), "version"),
        ] {
            distributor.answerChecks(answer)
            let refused = try await http.request(
                .PUT, "\(Self.app)/me/endpoints/phone", bearer: token, json: Self.unifiedPush(phone.json))
            #expect(refused.status == 400, "\(answer): \(refused.body)")
            #expect(
                refused.body.contains("endpoint check failed") && refused.body.contains(expected), "\(refused.body)")
        }
        // The same address rules as Web Push, before anything is sent: a private address is refused
        // without a GET.
        let checks = distributor.checkCount
        let privateAddress = try await http.request(
            .PUT, "\(Self.app)/me/endpoints/phone", bearer: token,
            json: Self.unifiedPush(phone.json.replacingOccurrences(of: distributor.host, with: "10.0.0.1")))
        #expect(privateAddress.status == 400 && privateAddress.body.contains("private"), "\(privateAddress.body)")
        #expect(distributor.checkCount == checks)

        distributor.answerChecks(.unifiedPush)
        let registered = try await http.request(
            .PUT, "\(Self.app)/me/endpoints/phone", bearer: token, json: Self.unifiedPush(phone.json))
        #expect(registered.status == 201, "\(registered.body)")

        // A push, once after a 429 for this endpoint (Retry-After 1).
        distributor.failNextSends(1, status: 429, retryAfter: 1)
        #expect(try await http.publish(user: "alice", id: "welcome") == 201)
        let pushed = await eventually(timeout: .seconds(20)) { !distributor.received(by: phone).isEmpty }
        #expect(pushed, "\(hub.log)")
        #expect(distributor.refusals.map(\.status) == [429])
        let tap = try #require(distributor.received(by: phone).first)
        let fields = try JSONSerialization.jsonObject(with: Data(tap.plaintext)) as? [String: String]
        #expect(fields?["hub"] == "tap" && fields?["app"] == "notes.contoso.com", "\(tap.text)")
        #expect(tap.subject == "mailto:ops@contoso.com")

        // The distributor says the endpoint is gone (410): it turns inactive.
        distributor.expire(phone)
        #expect(try await http.publish(user: "alice", id: "second") == 201)
        #expect(try await eventually { try await endpointState(http, token: token, id: "phone") == "inactive" })

        // Another endpoint, which the distributor then forgets (404): dropped as well.
        let laptop = distributor.makeSubscription(applicationServerKey: key.publicKey)
        let second = try await http.request(
            .PUT, "\(Self.app)/me/endpoints/laptop", bearer: token, json: Self.unifiedPush(laptop.json))
        #expect(second.status == 201, "\(second.body)")
        distributor.remove(laptop)
        #expect(try await http.publish(user: "alice", id: "third") == 201)
        #expect(try await eventually { try await endpointState(http, token: token, id: "laptop") == "inactive" })
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }

    func endpointState(_ http: HubHTTP, token: String, id: String) async throws -> String? {
        let body = try await http.request(.GET, "\(Self.app)/me/endpoints", bearer: token).body
        let list = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        let endpoints = list?["endpoints"] as? [[String: Any]] ?? []
        return endpoints.first { $0["id"] as? String == id }?["state"] as? String
    }

    static func escaped(_ token: String) -> String {
        token.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    static func web(_ token: String, declarative: Bool?) -> String {
        let flag = declarative.map { #","declarative":\#($0)"# } ?? ""
        return
            #"{"platform":"web","appId":"https://notes.contoso.com","transport":"webpush","token":"\#(escaped(token))"\#(flag)}"#
    }

    static func unifiedPush(_ token: String) -> String {
        #"{"platform":"android","appId":"com.contoso.notes","transport":"unifiedpush","token":"\#(escaped(token))"}"#
    }

    /// hub.yaml with one app on the web and Android platforms and its VAPID key.
    func writeConfig(in directory: URL, transports: String) throws {
        try writeServeFiles(
            in: directory,
            yaml: """
                server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub }
                store: { sqlite: { path: data/hub.sqlite } }
                transports:
                \(transports)
                apps:
                  - id: notes.contoso.com
                    platforms:
                      web: { appIds: ["https://notes.contoso.com"] }
                      android: { appIds: [com.contoso.notes] }
                    identity:
                      - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                    publishers: [ { name: backend, key: file:publisher.key } ]
                    credentials:
                      webpush: { vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }
                """)
    }
}
