import Foundation
import Testing

@testable import HubWebPush

@Suite("Web Push subscriptions and the push-service URL policy")
struct WebPushSubscriptionTests {
    static let p256dh = WebPushEncryptionTests.userAgentPublic
    static let auth = WebPushEncryptionTests.authSecret

    @Test("reads the browser's PushSubscription JSON, expirationTime and all")
    func parse() throws {
        let json =
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc:def","expirationTime":null,"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#
        let subscription = try WebPushSubscription(token: json)
        #expect(subscription.endpoint == "https://fcm.googleapis.com/fcm/send/abc:def")
        #expect(subscription.p256dh.count == 65)
        #expect(subscription.auth.count == 16)
        #expect(subscription.origin == "https://fcm.googleapis.com")
        #expect(try WebPushSubscription(token: subscription.json) == subscription)
        let withPort = WebPushSubscription(endpoint: "https://127.0.0.1:8443/push/1", p256dh: [], auth: [])
        #expect(withPort.origin == "https://127.0.0.1:8443")
    }

    @Test(
        "says which field is wrong",
        arguments: [
            ("not json", "PushSubscription"),
            (#"{"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#, "no endpoint"),
            (#"{"endpoint":"https://a.example/x","keys":{"auth":"\#(auth)"}}"#, "p256dh"),
            (#"{"endpoint":"https://a.example/x","keys":{"p256dh":"AAAA","auth":"\#(auth)"}}"#, "65 bytes"),
            (#"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh)"}}"#, "keys.auth"),
            (#"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh)","auth":"AAAA"}}"#, "16 bytes"),
        ])
    func invalid(_ token: String, _ expected: String) {
        #expect {
            try WebPushSubscription(token: token)
        } throws: { error in
            (error as? WebPushError).map { $0.code == .invalidSubscription && $0.message.contains(expected) } ?? false
        }
    }

    @Test("by default the browsers' push services are allowed, and with '*' any public https host")
    func publicHosts() {
        let defaults = WebPushEndpointPolicy()
        #expect(defaults.problem(with: "https://fcm.googleapis.com/fcm/send/x") == nil)
        #expect(defaults.problem(with: "https://updates.push.services.mozilla.com/wpush/v2/x") == nil)
        #expect(defaults.problem(with: "https://web.push.apple.com/QO") == nil)
        #expect(defaults.problem(with: "https://push.example.com/x")?.contains("allow-list") == true)
        let policy = WebPushEndpointPolicy(allowedHosts: ["*"])
        for url in [
            "https://fcm.googleapis.com/fcm/send/x", "https://updates.push.services.mozilla.com/wpush/v2/x",
            "https://web.push.apple.com/QO", "https://wns2-by3p.notify.windows.com/w/?token=x",
            "https://push.example.com:443/x", "https://8.8.8.8/x",
        ] {
            #expect(policy.problem(with: url) == nil, "\(url)")
        }
    }

    @Test(
        "http, user information, private, loopback and local hosts, other ports are refused",
        arguments: [
            "http://fcm.googleapis.com/fcm/send/x", "https://user:pw@fcm.googleapis.com/x", "https://127.0.0.1/x",
            "https://127.1/x", "https://0x7f.0.0.1/x", "https://2130706433/x", "https://10.1.2.3/x",
            "https://172.16.0.1/x", "https://192.168.1.1/x", "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/x", "https://0.0.0.0/x", "https://[::1]/x", "https://[fd00::1]/x",
            "https://[fe80::1]/x",
            "https://[::ffff:127.0.0.1]/x", "https://localhost/x", "https://push.localhost/x", "https://intranet/x",
            "https://printer.local/x", "https://push.example.com:8443/x", "https://push.example.com/a b", "not a url",
        ])
    func refused(_ url: String) {
        #expect(WebPushEndpointPolicy(allowedHosts: ["*"]).problem(with: url) != nil)
    }

    @Test("an allow-list admits only its services; an exact entry admits an emulator on loopback")
    func allowList() {
        let policy = WebPushEndpointPolicy(allowedHosts: ["fcm.googleapis.com", "*.push.apple.com", "127.0.0.1:8443"])
        #expect(policy.problem(with: "https://fcm.googleapis.com/fcm/send/x") == nil)
        #expect(policy.problem(with: "https://web.push.apple.com/x") == nil)
        #expect(policy.problem(with: "https://127.0.0.1:8443/push/1") == nil)
        #expect(policy.problem(with: "https://127.0.0.1:8444/push/1") != nil)
        #expect(policy.problem(with: "https://127.0.0.1/push/1") != nil)
        #expect(policy.problem(with: "https://push.apple.com.evil.example/x") != nil)
        #expect(policy.problem(with: "https://evilpush.apple.com/x") != nil)
        #expect(policy.problem(with: "https://updates.push.services.mozilla.com/x")?.contains("allow-list") == true)
        let wildcardPrivate = WebPushEndpointPolicy(allowedHosts: ["*.localhost"])
        #expect(wildcardPrivate.problem(with: "https://push.localhost/x") != nil)
    }

    @Test("topics: valid keys kept, others derived into 32 URL-safe characters, stable")
    func topics() {
        #expect(WebPushTopic("lunch1")?.value == "lunch1")
        #expect(WebPushTopic(String(repeating: "a", count: 33)) == nil)
        #expect(WebPushTopic("has space") == nil)
        let derived = WebPushTopic(deriving: "order/2024/ünïcode and a very long identifier indeed")
        #expect(derived.value.count == 32)
        #expect(WebPushTopic(derived.value) != nil)
        #expect(WebPushTopic(deriving: "order/2024/ünïcode and a very long identifier indeed") == derived)
        #expect(WebPushTopic(deriving: "lunch1").value == "lunch1")
    }
}
