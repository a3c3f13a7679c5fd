import Foundation
import HubCore
import HubEmulators
import HubTesting
import HubWebPush
import Testing

/// Declarative push messages: which subscriptions get them, their shape at the emulator, the fit
/// of long text, and the emulator's checks.
@Suite("Declarative Web Push")
struct DeclarativeWebPushTests {
    @Test(
        "a push service on declarativeHosts gets declarative visible messages, cut to fit; declarative:false keeps classic"
    )
    func byOrigin() async throws {
        try await WebPushFixture.with(configure: { $0.declarativeHosts = [$0.endpointPolicy.allowedHosts[0]] }) {
            fixture in
            let subscription = fixture.subscription()
            let long = String(repeating: "🙂 & ", count: 1500)
            let notification = UserNotification.fixture(
                VisualContent(title: "Lunch?", body: long, badge: 2), appId: fixture.app.id,
                appNotificationId: "lunch")
            let outcome = await fixture.transport.send(
                fixture.outbound(subscription, kind: .visible, notification: notification))
            #expect(outcome == .accepted, "\(fixture.emulator.refusals)")
            let message = try #require(fixture.emulator.received(by: subscription).first)
            #expect(message.isDeclarative)
            #expect(message.plaintext.count <= WebPushEncryption.maximumPlaintextSize)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: Any])
            let shown = try #require(json["notification"] as? [String: Any])
            #expect((shown["body"] as? String)?.hasSuffix("…") == true)
            #expect(json["app_badge"] as? Int == 2)

            // The same push service, but the subscription said declarative: false.
            var optedOut = fixture.outbound(subscription, kind: .visible, notification: notification)
            optedOut.endpoint.attributes["declarative"] = "false"
            #expect(await fixture.transport.send(optedOut) == .accepted)
            let classic = try #require(fixture.emulator.received(by: subscription).last)
            #expect(!classic.isDeclarative && classic.text.contains(#""hub":"visible""#))

            // Shoulder taps stay classic.
            #expect(await fixture.transport.send(fixture.outbound(subscription)) == .accepted)
            #expect(fixture.emulator.received(by: subscription).last?.text.contains(#""hub":"tap""#) == true)
        }
    }

    @Test("by default, web.push.apple.com subscriptions get declarative messages and FCM ones classic")
    func defaultHosts() throws {
        let transport = try WebPushTransport()
        #expect(WebPushConfiguration().declarativeHosts == ["*.push.apple.com"])
        let keys = WebPushEmulator.makeVAPIDKey().publicKey
        let app = CrossDeviceApp(id: WebPushFixture.appID, name: "Notes", platforms: [.web: [WebPushFixture.origin]])
        let notification = UserNotification.fixture(
            VisualContent(title: "Lunch?"), appId: app.id, appNotificationId: "lunch")
        for (service, declarative) in [
            ("https://web.push.apple.com/QGuQyavXutnMtf", true), ("https://fcm.googleapis.com/fcm/send/dQw4", false),
        ] {
            let token = WebPushSubscription(endpoint: service, p256dh: keys, auth: Array(repeating: 7, count: 16)).json
            let endpoint = Endpoint(
                id: "browser", appId: app.id, userId: "alice", platform: .web, platformAppId: WebPushFixture.origin,
                transport: .webpush, token: token, registeredAt: Date())
            let message = transport.message(for: .fixture(.visible, to: endpoint, app: app, notification: notification))
            #expect(
                WebPushEmulator.readDeclarative(message.payload) == (declarative ? .declarative : .classic),
                "\(service)")
        }
    }

    @Test("registration refuses a declarative attribute that is not true or false")
    func attributeChecked() async throws {
        try await WebPushFixture.with { fixture in
            var endpoint = fixture.endpoint(fixture.subscription())
            endpoint.attributes["declarative"] = "yes"
            #expect(
                fixture.transport.problem(registering: endpoint, for: fixture.app)?.contains("true or false") == true)
            endpoint.attributes["declarative"] = "true"
            #expect(fixture.transport.problem(registering: endpoint, for: fixture.app) == nil)
        }
    }

    @Test(
        "the emulator refuses what the declarative parser refuses",
        arguments: [
            (#"{"web_push":8031,"notification":{"title":"t","navigate":"https://a.example/"}}"#, "8030"),
            (#"{"web_push":true,"notification":{"title":"t","navigate":"https://a.example/"}}"#, "8030"),
            (#"{"web_push":8030}"#, "notification must be an object"),
            (#"{"web_push":8030,"notification":{"title":"","navigate":"https://a.example/"}}"#, "title"),
            (#"{"web_push":8030,"notification":{"title":"t"}}"#, "navigate"),
            (#"{"web_push":8030,"notification":{"title":"t","navigate":"/relative"}}"#, "navigate"),
            (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","dir":"up"}}"#, "dir"),
            (
                #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/","silent":"no"}}"#,
                "silent"
            ),
            (
                #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/"},"app_badge":-1}"#,
                "app_badge"
            ),
            (
                #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/"},"app_badge":1.5}"#,
                "app_badge"
            ),
        ])
    func emulatorRefuses(message: String, problem: String) {
        guard case .invalid(let text) = WebPushEmulator.readDeclarative(Array(message.utf8)) else {
            Issue.record("accepted \(message)")
            return
        }
        #expect(text.contains(problem), "\(text)")
    }

    @Test("the emulator reads classic messages as classic and a full declarative one as declarative")
    func emulatorAccepts() {
        #expect(WebPushEmulator.readDeclarative(Array(#"{"hub":"tap"}"#.utf8)) == .classic)
        #expect(WebPushEmulator.readDeclarative(Array("not json".utf8)) == .classic)
        let full = #"""
            {"web_push":8030,"mutable":false,"app_badge":0,
             "notification":{"title":"t","navigate":"https://a.example/x","dir":"ltr","lang":"en","body":"b",
                             "tag":"g","silent":true,"data":{"k":[1,null]}}}
            """#
        #expect(WebPushEmulator.readDeclarative(Array(full.utf8)) == .declarative)
    }
}
