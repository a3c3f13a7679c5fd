import Foundation
import HubEmulators
import HubTesting
import Testing

/// `hub serve` with the webpush plugin from hub.yaml, driven as examples/web drives it: a browser's
/// subscription registered as a web endpoint, a publish, the push decrypted at the (emulated) push
/// service, the feed synced with the user's token.
@Suite("hub serve: Web Push from hub.yaml, as examples/web uses it", .serialized)
struct ServeWebPushTests {
    @Test("a subscription registers as a webpush endpoint; publishes reach it encrypted; the feed syncs")
    func endToEnd() async throws {
        let push = try await WebPushEmulator.start()
        defer { Task { try? await push.shutdown() } }
        let (workspace, key) = try makeWebPushWorkspace(trusting: push)
        try writeWebConfig(in: workspace, allowedHost: push.host)
        let hub = try await RunningHub(directory: workspace)
        let http = HubHTTP(base: hub.baseURL)
        let token = try await http.userToken("alice")

        // The page asks the hub for the key it subscribes with: the public half only.
        let served = try await http.request(.GET, "/v1/apps/notes.contoso.com/webpush", bearer: token)
        #expect(served.status == 200, "\(served.body)")
        let servedKey = try JSONSerialization.jsonObject(with: Data(served.body.utf8)) as? [String: String]
        #expect(servedKey == ["applicationServerKey": WebPushEmulator.base64URLString(key.publicKey)])
        let anonymous = try await http.request(.GET, "/v1/apps/notes.contoso.com/webpush", bearer: "not-a-token")
        #expect(anonymous.status == 401)

        // What registerWebPush (clients/js) sends: the PushSubscription's JSON as the token.
        let subscription = push.makeSubscription(applicationServerKey: key.publicKey)
        let registered = try await http.request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/web-1", bearer: token,
            json: Self.registration(token: subscription.json))
        #expect(registered.status == 201, "\(registered.body)")

        // A private push-service host and a token that is not a subscription are refused.
        let private10 = subscription.json.replacingOccurrences(of: push.host, with: "10.0.0.1")
        let refused = try await http.request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/web-2", bearer: token,
            json: Self.registration(token: private10))
        #expect(refused.status == 400)
        #expect(refused.body.contains("private"), "\(refused.body)")
        let notJSON = try await http.request(
            .PUT, "/v1/apps/notes.contoso.com/me/endpoints/web-3", bearer: token,
            json: Self.registration(token: "just-a-token"))
        #expect(notJSON.status == 400)

        #expect(try await http.publish(user: "alice", id: "welcome") == 201)
        let tapped = await eventually { !push.received(by: subscription).isEmpty }
        #expect(tapped, "\(hub.log)")
        let tap = try #require(push.received(by: subscription).first)
        let fields = try JSONSerialization.jsonObject(with: Data(tap.plaintext)) as? [String: String]
        #expect(fields?["hub"] == "tap")
        #expect(fields?["app"] == "notes.contoso.com")
        #expect(tap.subject == "mailto:ops@contoso.com")
        #expect(tap.vapidKey == WebPushEmulator.base64URLString(key.publicKey))
        // The service worker's sync: the feed has what the tap announced.
        #expect(try await http.feedIDs(user: "alice") == ["welcome"])

        // The user unsubscribed: the push service answers 410 and the endpoint turns inactive.
        push.expire(subscription)
        #expect(try await http.publish(user: "alice", id: "second") == 201)
        let inactive = try await eventually {
            let body = try await http.request(.GET, "/v1/apps/notes.contoso.com/me/endpoints", bearer: token).body
            return body.contains("inactive")
        }
        #expect(inactive)
        #expect(!hub.log.contains(key.privateKeyPEM.split(separator: "\n")[1]), "the VAPID key must never be logged")
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }

    static func registration(token: String) -> String {
        let escaped = token.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"platform":"web","appId":"https://notes.contoso.com","transport":"webpush","token":"\#(escaped)"}"#
    }

    /// hub.yaml with one app on the web platform, its VAPID key, and the emulator allowed.
    func writeWebConfig(in directory: URL, allowedHost: String) throws {
        try writeServeFiles(
            in: directory,
            yaml: """
                server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub }
                store: { sqlite: { path: data/hub.sqlite } }
                transports:
                  webpush: { allowedHosts: ["\(allowedHost)"], trustRoots: file:webpush-ca.pem, timeout: 10s }
                apps:
                  - id: notes.contoso.com
                    platforms:
                      web: { appIds: ["https://notes.contoso.com"] }
                    identity:
                      - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                    publishers: [ { name: backend, key: file:publisher.key } ]
                    credentials:
                      webpush: { vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }
                """)
    }
}
