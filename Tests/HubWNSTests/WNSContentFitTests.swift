import Foundation
import HubCore
import HubEmulators
import HubTesting
import HubWNS
import Testing

@Suite("WNS: content that fits, badge and tile from the publish")
struct WNSContentFitTests {
    static func notification(_ visual: VisualContent) -> UserNotification {
        .fixture(visual, appId: WNSFixture.appID, appNotificationId: "lunch1")
    }

    @Test("a body too large for 5000 bytes of XML reaches the emulator cut with '…' instead of being refused")
    func longBodyIsTrimmed() async throws {
        try await WNSFixture.with { fixture in
            // 1,200 × "a & " is 4,800 bytes of text but 7,200 of XML ("&amp;").
            let body = String(repeating: "a & ", count: 1200)
            let shown = Self.notification(VisualContent(title: "Lunch", body: body))
            let outbound = fixture.outbound(channelURI: fixture.channel(), kind: .visible, notification: shown)
            #expect(await fixture.transport.send(outbound) == .accepted)
            let sent = try #require(fixture.emulator.received.first)
            #expect(sent.type == "wns/toast")
            #expect(sent.body.count <= 5000 && sent.body.count > 4900, "\(sent.body.count)")
            #expect(sent.text.contains("<text>Lunch</text>"))
            #expect(sent.text.contains("…</text>") && !sent.text.contains(" …"), "cut, no trailing space")
            #expect(fixture.emulator.refusedSends.isEmpty)
        }
    }

    @Test("badge and tile fields send a wns/badge and a wns/tile before the toast; loc keys show the fallback text")
    func badgeTileToast() async throws {
        try await WNSFixture.with { fixture in
            let shown = Self.notification(
                VisualContent(
                    title: "New message", body: "Alice: lunch?", titleLocKey: "NEW_TITLE", bodyLocKey: "NEW_BODY",
                    bodyLocArgs: ["Alice"], badge: 3, tile: true))
            let channel = fixture.channel()
            let outbound = fixture.outbound(channelURI: channel, kind: .visible, notification: shown)
            #expect(await fixture.transport.send(outbound) == .accepted)
            let received = fixture.emulator.received(on: channel)
            #expect(received.map(\.type) == ["wns/badge", "wns/tile", "wns/toast"])
            #expect(received.first?.text == #"<badge value="3"/>"#)
            let tile = try #require(received.dropFirst().first)
            #expect(tile.text.contains(#"<text hint-wrap="true">New message</text>"#))
            #expect(tile.text.contains(#"<text hint-wrap="true">Alice: lunch?</text>"#))
            #expect(tile.tag == "lunch1")
            let toast = try #require(received.last)
            #expect(toast.text.contains("<text>New message</text><text>Alice: lunch?</text>"))
            #expect(!toast.text.contains("NEW_"), "WNS has no localisation keys: the fallback text is shown")
        }
    }

    @Test("without badge and tile a visible delivery is the toast alone; badge 0 clears the badge")
    func onlyWhatWasAsked() async throws {
        try await WNSFixture.with { fixture in
            let plain = fixture.channel()
            let shown = Self.notification(VisualContent(title: "Hi"))
            #expect(
                await fixture.transport.send(fixture.outbound(channelURI: plain, kind: .visible, notification: shown))
                    == .accepted)
            #expect(fixture.emulator.received(on: plain).map(\.type) == ["wns/toast"])
            let cleared = fixture.channel()
            let zero = Self.notification(VisualContent(title: "Hi", badge: 0))
            #expect(
                await fixture.transport.send(fixture.outbound(channelURI: cleared, kind: .visible, notification: zero))
                    == .accepted)
            #expect(fixture.emulator.received(on: cleared).first?.text == #"<badge value="none"/>"#)
        }
    }
}
