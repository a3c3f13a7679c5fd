import Foundation
import HubEmulators
import HubTesting
import Testing

/// `hub serve` with APNs, FCM, WNS and Web Push pointed at their emulators, and alice's four
/// devices registered over HTTP: an iPhone (`iphone`), an Android phone (`pixel`), a Windows PC
/// (`surface`) and a browser (`browser`). The suites that follow one publish or read to every
/// platform's wire start here.
struct FourPlatformHub {
    static let sid = "ms-app://s-1-15-2-1234567890-1234567890-1234567890-1234567890-1234567890-1234567890-123456789"

    let apns: APNSEmulator
    let fcm: FCMEmulator
    let wns: WNSEmulator
    let push: WebPushEmulator
    let hub: RunningHub
    let http: HubHTTP
    let channel: String
    let subscription: WebPushEmulator.Subscription

    /// Stops the hub (SIGTERM) and the emulators.
    func shutdown() async {
        hub.signal(SIGTERM)
        _ = await hub.waitForExit()
        await apns.shutdown()
        try? await fcm.shutdown()
        try? await wns.shutdown()
        try? await push.shutdown()
    }

    /// Starts the emulators and `hub serve` with one app on the four platforms, and registers
    /// alice's four devices.
    /// - Parameters:
    ///   - hubSettings: hub.yaml lines before `transports:` (e.g. `limits: {…}`).
    ///   - appSettings: lines of the app's entry (e.g. `delivery: { badge: unread }`).
    static func start(hubSettings: String = "", appSettings: String = "") async throws -> FourPlatformHub {
        let apns = try await APNSEmulator.start()
        let fcm = try await FCMEmulator.start()
        let wns = try await WNSEmulator.start(authority: fcm.authority)
        let push = try await WebPushEmulator.start()
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
        try writeServeFiles(
            in: workspace,
            yaml: """
                server: { listen: "127.0.0.1:0", adminToken: file:admin.token, instanceId: test-hub }
                store: { sqlite: { path: data/hub.sqlite } }
                \(hubSettings)
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
                    \(appSettings)
                    credentials:
                      apns: { teamId: \(key.teamID), keyId: \(key.keyID), privateKey: file:AuthKey.p8, environment: production }
                      fcm: { serviceAccount: file:account.json }
                      wns: { packageSid: "\(Self.sid)", clientSecret: file:wns.secret }
                      webpush: { vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }
                """)
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
        return FourPlatformHub(
            apns: apns, fcm: fcm, wns: wns, push: push, hub: hub, http: http, channel: channel,
            subscription: subscription)
    }
}
