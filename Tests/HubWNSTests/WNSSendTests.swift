import Foundation
import HubCore
import HubEmulators
import HubWNS
import Testing

@Suite("WNS: what goes on the wire")
struct WNSSendTests {
    @Test("a tap is wns/raw, application/octet-stream, cached, with a TTL and a content-free body")
    func tap() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            #expect(await fixture.transport.send(fixture.outbound(channelURI: channel, version: 42)) == .accepted)
            let sent = try #require(fixture.emulator.received.first)
            #expect(sent.type == "wns/raw" && sent.contentType == "application/octet-stream")
            #expect(sent.cachePolicy == "cache")
            #expect(sent.timeToLive == "86400")
            #expect(sent.priority == nil, "raw keeps WNS's default priority for normal notifications")
            #expect(sent.text == #"{"hub":"tap","app":"notes.contoso.com","v":"42"}"#)
        }
    }

    @Test("a tap of a high-priority notification asks for X-WNS-PRIORITY 1")
    func highPriority() async throws {
        try await WNSFixture.with { fixture in
            let outbound = fixture.outbound(channelURI: fixture.channel(), priority: .high)
            #expect(await fixture.transport.send(outbound) == .accepted)
            #expect(fixture.emulator.received.first?.priority == "1")
        }
    }

    @Test("a visible delivery is a toast with escaped text, a tag, a group and the TTL to expiry")
    func toast() async throws {
        try await WNSFixture.with { fixture in
            let shown = WNSFixture.notification(
                title: #"Tom & Jerry <3 "quotes" 'apostrophes'"#, body: "a < b && c > d", groupName: "team",
                lifetime: 1800)
            let outbound = fixture.outbound(channelURI: fixture.channel(), kind: .visible, notification: shown)
            #expect(await fixture.transport.send(outbound) == .accepted, "the emulator accepts it as well-formed XML")
            let sent = try #require(fixture.emulator.received.first)
            #expect(sent.type == "wns/toast" && sent.contentType == "text/xml")
            #expect(sent.text.contains("<text>Tom &amp; Jerry &lt;3 &quot;quotes&quot; &apos;apostrophes&apos;</text>"))
            #expect(sent.text.contains("<text>a &lt; b &amp;&amp; c &gt; d</text>"))
            #expect(sent.text.contains(#"launch="hub=visible&amp;app=notes.contoso.com&amp;id=n-1&amp;v=7""#))
            #expect(sent.tag == "lunch1" && sent.group == "team")
            let ttl = try #require(sent.timeToLive.flatMap { Int($0) })
            #expect((1790...1800).contains(ttl))
            #expect(sent.cachePolicy == nil, "cache policy does not apply to toasts")
        }
    }

    @Test("long or non-alphanumeric IDs become stable 16-character tags")
    func derivedTags() async throws {
        let long = WNSTag(deriving: "order-2024-05-17/line-item-0042")
        #expect(long.value.count == 16 && long.value.allSatisfy(\.isHexDigit))
        #expect(long == WNSTag(deriving: "order-2024-05-17/line-item-0042"), "stable across calls")
        #expect(long != WNSTag(deriving: "order-2024-05-17/line-item-0043"))
        #expect(WNSTag(deriving: "abc123").value == "abc123")
        #expect(WNSTag(exactly: "has-dash") == nil && WNSTag(exactly: "ok1") != nil)
        try await WNSFixture.with { fixture in
            let shown = WNSFixture.notification(appNotificationId: "order-2024-05-17/line-item-0042")
            let outbound = fixture.outbound(channelURI: fixture.channel(), kind: .visible, notification: shown)
            #expect(await fixture.transport.send(outbound) == .accepted)
            #expect(fixture.emulator.received.first?.tag == long.value)
        }
    }

    @Test("badge and tile through the typed API are accepted by the emulator")
    func badgeAndTile() async throws {
        try await WNSFixture.with { fixture in
            let channel = fixture.channel()
            let client = fixture.transport.client
            let badge = try await client.send(
                .badge(WNSBadge(.number(120))), to: channel, credentials: WNSFixture.classic)
            #expect(badge.notificationStatus == "received" && badge.messageID != nil)
            let tile = WNSTile(lines: ["One & two", "three"], tag: WNSTag(deriving: "t"), cachePolicy: .cache)
            let status = try await client.send(
                .tile(tile), to: channel, credentials: WNSFixture.classic, options: WNSSendOptions(requestStatus: true))
            #expect(status.deviceConnectionStatus == "connected")
            let received = fixture.emulator.received(on: channel)
            #expect(received.map(\.type) == ["wns/badge", "wns/tile"])
            #expect(received.first?.text == #"<badge value="99"/>"#)
        }
    }

    @Test("a body over 5000 bytes is refused by the client before sending")
    func oversize() async throws {
        try await WNSFixture.with { fixture in
            let raw = WNSNotification.raw(WNSRaw(bytes: Array(repeating: UInt8(ascii: "x"), count: 5001)))
            await #expect {
                _ = try await fixture.transport.client.send(
                    raw, to: fixture.channel(), credentials: WNSFixture.classic)
            } throws: { "\($0)".contains("5000") }
            #expect(fixture.emulator.received.isEmpty && fixture.emulator.tokenRequests == 0)
        }
    }
}
