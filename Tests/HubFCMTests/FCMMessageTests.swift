import Foundation
import HubCore
import Testing

@testable import HubEmulators
@testable import HubFCM

@Suite("FCM: message JSON over the wire")
struct FCMMessageTests {
    @Test("a tap is a data message with string values, NORMAL priority, collapse key, TTL and the package, over h2")
    func tap() async throws {
        try await FCMFixture.with { fixture in
            #expect(await fixture.transport.send(fixture.outbound(version: 42)) == .accepted)
            let message = try #require(fixture.emulator.messages.first)
            #expect(message.token == "device-token-1")
            #expect(message.data == ["hub": "tap", "app": FCMFixture.appID, "v": "42"])
            #expect(message.notificationTitle == nil && message.notificationBody == nil)
            #expect(message.androidPriority == "NORMAL")
            #expect(message.androidTTL == "86400s")
            #expect(message.collapseKey == "hub-tap")
            #expect(message.restrictedPackageName == FCMFixture.package)
            #expect(message.project == FCMTestServiceAccount.primary.projectID)
            #expect(message.httpVersion == "HTTP/2.0", "AsyncHTTPClient negotiates h2 by ALPN")
        }
    }

    @Test("a tap of a high-priority notification is sent with HIGH priority")
    func highPriorityTap() async throws {
        try await FCMFixture.with { fixture in
            #expect(await fixture.transport.send(fixture.outbound(priority: .high)) == .accepted)
            #expect(fixture.emulator.messages.first?.androidPriority == "HIGH")
        }
    }

    @Test("a visible delivery carries notification {title, body}, the notification ID, a tag and the TTL to expiry")
    func visible() async throws {
        let clock = TestClock()
        try await FCMFixture.with(clock: clock) { fixture in
            let shown = FCMFixture.notification(now: clock.now, lifetime: 5400)
            let outbound = fixture.outbound(kind: .visible, notification: shown)
            #expect(await fixture.transport.send(outbound) == .accepted)
            let message = try #require(fixture.emulator.messages.first)
            #expect(message.notificationTitle == "Lunch?" && message.notificationBody == "At noon")
            #expect(message.data["hub"] == "visible" && message.data["id"] == shown.id)
            #expect(message.androidTTL == "5400s")
            #expect(message.androidTag == "lunch-1")
            #expect(message.collapseKey == nil)
        }
    }

    @Test("a fallback is a visible notification marked fallback, sent HIGH")
    func fallback() async throws {
        try await FCMFixture.with { fixture in
            let outbound = fixture.outbound(kind: .fallback, notification: FCMFixture.notification())
            #expect(await fixture.transport.send(outbound) == .accepted)
            let message = try #require(fixture.emulator.messages.first)
            #expect(message.data["hub"] == "fallback" && message.androidPriority == "HIGH")
        }
    }

    @Test("a message whose data is over 4096 bytes is refused by the client before anything is sent")
    func oversize() async throws {
        try await FCMFixture.with { fixture in
            let message = FCMMessage(target: .token("t"), data: ["k": String(repeating: "x", count: 4100)])
            await #expect {
                _ = try await fixture.transport.client.send(message, credentials: fixture.credentials)
            } throws: { "\($0)".contains("4096") }
            #expect(fixture.emulator.tokenExchanges == 0 && fixture.emulator.messages.isEmpty)
        }
    }

    @Test("the emulator refuses what FCM refuses: non-string data, two targets, bad TTL, reserved keys, size")
    func emulatorValidation() {
        func problem(_ json: String) -> String? {
            if case .failure(let problem) = FCMEmulator.parse(Array(json.utf8)) { return problem.description }
            return nil
        }
        #expect(problem(#"{"message":{"token":"t","data":{"n":12}}}"#)?.contains("TYPE_STRING") == true)
        #expect(problem(#"{"message":{"token":"t","topic":"x"}}"#)?.contains("Exactly one") == true)
        #expect(problem(#"{"message":{"data":{"a":"b"}}}"#)?.contains("Exactly one") == true)
        #expect(problem(#"{"message":{"token":"t","android":{"ttl":"3600"}}}"#)?.contains("ttl") == true)
        #expect(problem(#"{"message":{"token":"t","android":{"ttl":"2419201s"}}}"#)?.contains("ttl") == true)
        #expect(problem(#"{"message":{"token":"t","android":{"priority":"URGENT"}}}"#)?.contains("priority") == true)
        #expect(problem(#"{"message":{"token":"t","data":{"google.x":"y"}}}"#)?.contains("reserved") == true)
        #expect(problem(#"{"message":{"token":"t","colapse_key":"x"}}"#)?.contains("Unknown name") == true)
        let big = String(repeating: "x", count: 4097)
        #expect(problem(#"{"message":{"token":"t","data":{"k":"\#(big)"}}}"#)?.contains("too big") == true)
        #expect(
            problem(#"{"message":{"token":"t","data":{"hub":"tap"},"android":{"priority":"high","ttl":"3.5s"}}}"#)
                == nil)
    }

    @Test("the request body: exactly one target, snake_case Android fields, escaping, validate_only")
    func encoding() throws {
        let message = FCMMessage(
            target: .topic("news"), data: ["b": "line\nbreak \"quoted\" \u{1}", "a": "é"],
            notification: FCMNotification(title: "T"),
            android: FCMAndroidConfig(
                priority: .high, timeToLive: .seconds(9_999_999), collapseKey: "k", restrictedPackageName: "p",
                notification: FCMAndroidNotification(tag: "t", channelID: "c")))
        let json = String(decoding: message.requestBody(validateOnly: true), as: UTF8.self)
        #expect(
            json == #"{"message":{"topic":"news","data":{"a":"é","b":"line\nbreak \"quoted\" \u0001"},"#
                + #""notification":{"title":"T"},"android":{"priority":"HIGH","ttl":"2419200s","collapse_key":"k","#
                + #""restricted_package_name":"p","notification":{"tag":"t","channel_id":"c"}}},"validate_only":true}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(parsed?["validate_only"] as? Bool == true)
        #expect(message.payloadSize == 26, "keys and values of data (1 + 2 + 1 + 21) and the title (1)")
    }
}
