import Foundation
import HubCore
import HubTesting
import Testing

@testable import HubEmulators
@testable import HubFCM

@Suite("FCM: content that fits, localisation keys and badge count")
struct FCMContentFitTests {
    static func notification(_ visual: VisualContent) -> UserNotification {
        .fixture(visual, appId: FCMFixture.appID, appNotificationId: "lunch-1")
    }

    /// The `android.notification` object of a message as the emulator received it.
    static func androidNotification(_ message: FCMEmulator.ReceivedMessage) throws -> [String: Any] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(message.json.utf8)) as? [String: Any])
        let android = try #require((root["message"] as? [String: Any])?["android"] as? [String: Any])
        return try #require(android["notification"] as? [String: Any])
    }

    @Test("a body over FCM's 4096 bytes reaches the emulator cut on a character with '…', not rejected")
    func longBodyIsTrimmed() async throws {
        try await FCMFixture.with { fixture in
            let body = String(repeating: "é🙂", count: 1000)  // 6,000 bytes
            let shown = Self.notification(VisualContent(title: "Lunch", body: body))
            #expect(await fixture.transport.send(fixture.outbound(kind: .visible, notification: shown)) == .accepted)
            let message = try #require(fixture.emulator.messages.first)
            let sent = try #require(message.notificationBody)
            #expect(sent.hasSuffix("…") && sent.count > 1)
            #expect(body.hasPrefix(sent.dropLast()), "a prefix of whole characters")
            let counted =
                message.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } + "Lunch".utf8.count
                + sent.utf8.count
            #expect(counted <= 4096 && counted > 4096 - 8, "\(counted)")
            #expect(message.notificationTitle == "Lunch")
        }
    }

    @Test("loc keys, their arguments and the badge go in android.notification as FCM v1 takes them")
    func localisationAndBadge() async throws {
        try await FCMFixture.with { fixture in
            let shown = Self.notification(
                VisualContent(
                    title: "New message", body: "Alice: lunch?", titleLocKey: "NEW_TITLE", titleLocArgs: ["3"],
                    bodyLocKey: "NEW_BODY", bodyLocArgs: ["Alice", "lunch?"], badge: 4))
            #expect(await fixture.transport.send(fixture.outbound(kind: .visible, notification: shown)) == .accepted)
            let message = try #require(fixture.emulator.messages.first)
            let android = try Self.androidNotification(message)
            #expect(android["title_loc_key"] as? String == "NEW_TITLE")
            #expect(android["title_loc_args"] as? [String] == ["3"])
            #expect(android["body_loc_key"] as? String == "NEW_BODY")
            #expect(android["body_loc_args"] as? [String] == ["Alice", "lunch?"])
            #expect((android["notification_count"] as? NSNumber)?.intValue == 4)
            #expect(message.notificationTitle == "New message" && message.notificationBody == "Alice: lunch?")
        }
    }

    @Test("the emulator refuses android.notification fields FCM refuses: unknown names, non-string args, counts")
    func emulatorValidation() {
        func problem(_ notification: String) -> String? {
            let json = #"{"message":{"token":"t","android":{"notification":\#(notification)}}}"#
            if case .failure(let problem) = FCMEmulator.parse(Array(json.utf8)) { return problem.description }
            return nil
        }
        #expect(problem(#"{"body_loc_args":["a",1]}"#)?.contains("body_loc_args[1]") == true)
        #expect(problem(#"{"title_loc_args":"a"}"#)?.contains("title_loc_args") == true)
        #expect(problem(#"{"title_loc_key":7}"#)?.contains("TYPE_STRING") == true)
        #expect(problem(#"{"notification_count":"4"}"#)?.contains("notification_count") == true)
        #expect(problem(#"{"notification_count":1.5}"#)?.contains("notification_count") == true)
        #expect(problem(#"{"loc_key":"x"}"#)?.contains("Unknown name") == true)
        #expect(
            problem(
                #"{"tag":"t","title_loc_key":"K","title_loc_args":[],"body_loc_key":"B","body_loc_args":["x"],"notification_count":0}"#
            ) == nil)
    }
}
