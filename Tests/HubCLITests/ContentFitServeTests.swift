import Foundation
import HubEmulators
import HubTesting
import Testing

/// `hub serve` with APNs, FCM, WNS and Web Push pointed at their emulators: one publish over HTTP
/// with a body too long for every provider, localisation keys, a badge and a tile, and what each
/// emulator received over the wire.
@Suite("hub serve: content that fits every platform, over HTTP and the emulators", .serialized)
struct ContentFitServeTests {
    @Test("a long visible publish reaches iOS, Android, Windows and the web trimmed, with loc keys, badge and tile")
    func everyPlatform() async throws {
        // hub.yaml allows 16 KiB payloads, so each provider's own limit is what cuts.
        let devices = try await FourPlatformHub.start(hubSettings: "limits: { maxPayloadBytes: 16384 }")
        let (apns, fcm, wns, push) = (devices.apns, devices.fcm, devices.wns, devices.push)
        let (hub, http, channel, subscription) = (devices.hub, devices.http, devices.channel, devices.subscription)
        defer {
            Task {
                await apns.shutdown()
                try? await fcm.shutdown()
                try? await wns.shutdown()
                try? await push.shutdown()
            }
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
