import Foundation
import HubEmulators
import HubTesting
import Testing

/// `hub serve` with APNs, FCM, WNS and Web Push pointed at their emulators: one publish over HTTP
/// with a body too long for every provider, localisation keys, a badge and a tile, and what each
/// emulator received over the wire.
@Suite("hub serve: content that fits every platform, over HTTP and the emulators", .serialized)
struct ContentFitServeTests {
    static let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"

    @Test("a long visible publish reaches iOS, Android, Windows and the web trimmed, with loc keys, badge and tile")
    func everyPlatform() async throws {
        let apns = try await APNSEmulator.start()
        let fcm = try await FCMEmulator.start()
        let wns = try await WNSEmulator.start(authority: fcm.authority)
        let push = try await WebPushEmulator.start()
        defer {
            Task {
                await apns.shutdown()
                try? await fcm.shutdown()
                try? await wns.shutdown()
                try? await push.shutdown()
            }
        }
        let key = APNSTestKey()
        apns.register(key, bundleIDs: ["com.contoso.notes"])
        try await fcm.register(.primary)
        wns.registerPackage(sid: Self.sid, secret: "package-secret")
        let vapid = WebPushEmulator.makeVAPIDKey()

        let workspace = try makeWorkspace()
        func write(_ text: String, _ name: String) throws {
            try text.write(to: workspace.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try write(key.privateKeyPEM, "AuthKey.p8")
        try write(apns.trustRootPEM, "apns-ca.pem")
        try write(fcm.trustRootPEM, "google-ca.pem")
        try write(push.trustRootPEM, "webpush-ca.pem")
        try write(FCMTestServiceAccount.primary.serviceAccountJSON(tokenURI: fcm.tokenURI), "account.json")
        try write("package-secret", "wns.secret")
        try write(vapid.privateKeyPEM, "vapid.pem")
        try write("test-admin-token-0123456789", "admin.token")
        try write("test-user-token-secret-0123456789", "user.secret")
        try write(
            """
            server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub }
            store: { sqlite: { path: data/hub.sqlite } }
            limits: { maxPayloadBytes: 16384 }
            transports:
              webpush: { allowedHosts: ["\(push.host)"], trustRoots: file:webpush-ca.pem, timeout: 10s }
            apps:
              - id: notes.contoso.com
                platforms:
                  ios: { appIds: [com.contoso.notes] }
                  android: { appIds: [com.contoso.notes] }
                  windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] }
                  web: { appIds: ["https://notes.contoso.com"] }
                identity:
                  - { issuer: "https://login.contoso.com", audiences: [contoso-notes], secret: file:user.secret }
                publishers: [ { name: backend, key: file:publisher.key } ]
                credentials:
                  apns: { teamId: \(key.teamID), keyId: \(key.keyID), privateKey: file:AuthKey.p8, environment: production }
                  fcm: { serviceAccount: file:account.json }
                  wns: { packageSid: "\(Self.sid)", clientSecret: file:wns.secret }
                  webpush: { vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }
            """, "hub.yaml")
        let ca = { (name: String) in workspace.appendingPathComponent(name).path }
        let hub = try await RunningHub(
            directory: workspace,
            environment: [
                "HUB_TRANSPORTS_APNS_SERVER": "127.0.0.1:\(apns.port)",
                "HUB_TRANSPORTS_APNS_TRUST_ROOTS": ca("apns-ca.pem"),
                "HUB_TRANSPORTS_FCM_SEND_URL": fcm.baseURL, "HUB_TRANSPORTS_FCM_TRUST_ROOTS": ca("google-ca.pem"),
                "HUB_TRANSPORTS_WNS_TOKEN_URL": wns.classicTokenURL, "HUB_TRANSPORTS_WNS_ALLOWED_HOSTS": wns.host,
                "HUB_TRANSPORTS_WNS_TRUST_ROOTS": ca("google-ca.pem"),
            ])
        let http = HubHTTP(base: hub.baseURL)
        let token = try await http.userToken("alice")
        let subscription = push.makeSubscription(applicationServerKey: vapid.publicKey)
        let channel = wns.makeChannel(forApp: Self.sid)
        for (id, body) in [
            (
                "iphone",
                #"{"platform":"ios","appId":"com.contoso.notes","transport":"apns","token":"a1b2c3d4","environment":"production"}"#
            ),
            (
                "pixel",
                #"{"platform":"android","appId":"com.contoso.notes","transport":"fcm","token":"fcm-token-pixel"}"#
            ),
            (
                "surface",
                #"{"platform":"windows","appId":"Contoso.Notes_8wekyb3d8bbwe","transport":"wns","token":"\#(channel)"}"#
            ),
            ("browser", ServeWebPushTests.registration(token: subscription.json)),
        ] {
            let registered = try await http.request(
                .PUT, "/v1/apps/notes.contoso.com/me/endpoints/\(id)", bearer: token, json: body)
            #expect(registered.status == 201, "\(id): \(registered.body)")
        }

        // 6,000 bytes of body (hub.yaml allows 16 KiB payloads): over APNs' and FCM's 4096, WNS's
        // 5000 (8,400 as XML) and Web Push's 3993, so every provider gets it cut.
        let body = String(repeating: "🙂 & ", count: 750)
        let publish = """
            {"appNotificationId": "msg-1", "deliveryMode": "visible", "payload": {"visualContent": {
              "title": "New message", "body": "\(body)",
              "titleLocKey": "NEW_TITLE", "titleLocArgs": ["2"], "bodyLocKey": "NEW_BODY",
              "bodyLocArgs": ["Alice", "noon"], "badge": 3, "tile": true}}}
            """
        let published = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/users/alice/notifications", bearer: http.publisherKey, json: publish)
        #expect(published.status == 201, "\(published.body)")
        let arrived = await eventually {
            !apns.requests.isEmpty && !fcm.messages.isEmpty && wns.received(on: channel).count == 3
                && !push.received(by: subscription).isEmpty
        }
        #expect(arrived, "\(hub.log)")
        #expect(try await eventually { try await http.statistics().pending == 0 }, "every delivery accepted")

        // APNs: an alert with loc keys and badge, the body cut to fit 4096 bytes.
        let apnsRequest = try #require(apns.requests.first)
        #expect(apnsRequest.status == 200 && apnsRequest.header("apns-push-type") == "alert")
        #expect(apnsRequest.payload.count <= 4096)
        let aps = try #require(
            (try JSONSerialization.jsonObject(with: Data(apnsRequest.payload)) as? [String: Any])?["aps"]
                as? [String: Any])
        #expect((aps["badge"] as? NSNumber)?.intValue == 3)
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["loc-key"] as? String == "NEW_BODY" && alert["title-loc-key"] as? String == "NEW_TITLE")
        #expect(alert["loc-args"] as? [String] == ["Alice", "noon"] && alert["title-loc-args"] as? [String] == ["2"])
        Self.expectCut(alert["body"] as? String, of: body, "APNs")

        // FCM: the loc keys and the count in android.notification.
        let message = try #require(fcm.messages.first)
        let root = try JSONSerialization.jsonObject(with: Data(message.json.utf8)) as? [String: Any]
        let android = ((root?["message"] as? [String: Any])?["android"] as? [String: Any])?["notification"]
        let notification = try #require(android as? [String: Any])
        #expect(notification["body_loc_key"] as? String == "NEW_BODY")
        #expect(notification["body_loc_args"] as? [String] == ["Alice", "noon"])
        #expect(notification["title_loc_key"] as? String == "NEW_TITLE")
        #expect((notification["notification_count"] as? NSNumber)?.intValue == 3)
        Self.expectCut(message.notificationBody, of: body, "FCM")

        // WNS: badge, tile, then the toast, whose XML would be 5,760+ bytes uncut.
        let windows = wns.received(on: channel)
        #expect(windows.map(\.type) == ["wns/badge", "wns/tile", "wns/toast"])
        #expect(windows.first?.text == #"<badge value="3"/>"#)
        #expect(windows.dropFirst().first?.text.contains(#"<text hint-wrap="true">New message</text>"#) == true)
        let toast = try #require(windows.last)
        #expect(toast.body.count <= 5000 && toast.body.count > 4900 && toast.text.contains("…</text>"))
        #expect(toast.text.contains("<text>🙂 &amp; 🙂"), "the fallback text is shown")
        #expect(wns.refusedSends.isEmpty)

        // Web Push: title and the body cut to its 3993 bytes of plaintext.
        let web = try #require(push.received(by: subscription).first)
        let fields = try JSONSerialization.jsonObject(with: Data(web.plaintext)) as? [String: String]
        #expect(fields?["title"] == "New message")
        Self.expectCut(fields?["body"], of: body, "Web Push")

        // The stored notification keeps the whole body and every field.
        let stored = try await http.request(
            .GET, "/v1/apps/notes.contoso.com/users/alice/notifications/msg-1", bearer: http.publisherKey)
        #expect(stored.body.contains(#""badge":3"#) && stored.body.contains(#""tile":true"#), "\(stored.body)")
        #expect(stored.body.contains(body))
        hub.signal(SIGTERM)
        #expect(await hub.waitForExit() == 0)
    }

    /// `sent` is a cut of `body`: a shorter prefix of whole characters ending with "…".
    static func expectCut(
        _ sent: String?, of body: String, _ provider: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let sent else {
            Issue.record("\(provider): no body", sourceLocation: sourceLocation)
            return
        }
        #expect(
            sent.hasSuffix("…") && sent.count > 100, "\(provider): \(sent.suffix(20))", sourceLocation: sourceLocation)
        #expect(
            body.hasPrefix(sent.dropLast()) && sent.utf8.count < body.utf8.count, "\(provider)",
            sourceLocation: sourceLocation)
    }
}
