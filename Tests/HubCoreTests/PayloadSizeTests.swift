import Foundation
import Testing

@testable import HubCore

@Suite("Payload size")
struct PayloadSizeTests {
    @Test("The cheap bound is never below the encoded size, whatever the text escapes to")
    func boundHoldsForEscapes() {
        let texts = [
            "", "plain", String(repeating: "\u{1}", count: 300), String(repeating: "\"\\/", count: 100),
            "\u{2028}\u{2029}é漢字🙂", "\u{7F}\u{80}\u{9F}", String(repeating: "\n\t\r", count: 50),
        ]
        for raw in texts {
            for title in texts.prefix(3) {
                let payload = NotificationPayload(
                    rawContent: raw, visualContent: VisualContent(title: title, body: raw.isEmpty ? nil : raw))
                #expect(Hub.encodedSizeBound(of: payload) >= Hub.encodedSize(of: payload), "\(payload)")
            }
        }
        let bare = NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "t"))
        #expect(Hub.encodedSizeBound(of: bare) >= Hub.encodedSize(of: bare))
        for text in texts {
            let every = NotificationPayload(
                visualContent: VisualContent(
                    title: "t", titleLocKey: text, titleLocArgs: [text, "", text], bodyLocKey: "k",
                    bodyLocArgs: Array(repeating: text, count: 20), badge: Hub.maximumBadge, tile: false))
            #expect(Hub.encodedSizeBound(of: every) >= Hub.encodedSize(of: every), "\(every)")
        }
    }

    @Test("The stored JSON of a payload is exactly JSONEncoder's, with sorted keys, for every character class")
    func storedJSONMatchesJSONEncoder() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let every = String(String.UnicodeScalarView((0..<0x80).compactMap(Unicode.Scalar.init)))
        let texts = [
            "", "plain", every, "\"\\/</script>", "\u{2028}\u{2029}é漢字🙂\u{FFFE}", "\u{7F}\u{80}\u{9F}", "a/b\\c",
        ]
        var payloads = [
            NotificationPayload(), NotificationPayload(rawContent: "only raw"),
            NotificationPayload(visualContent: VisualContent(title: "only a title")),
        ]
        payloads.append(
            NotificationPayload(
                visualContent: VisualContent(
                    title: "t", body: "b", titleLocKey: "T_KEY", titleLocArgs: [], bodyLocKey: "B/KEY",
                    bodyLocArgs: ["a", "b\"c"], badge: 0, tile: true)))
        payloads.append(NotificationPayload(visualContent: VisualContent(title: "t", badge: 12, tile: false)))
        for text in texts {
            payloads.append(
                NotificationPayload(
                    visualContent: VisualContent(
                        title: text, titleLocKey: text, titleLocArgs: [text], bodyLocKey: text,
                        bodyLocArgs: [text, text])))
            payloads.append(NotificationPayload(rawContent: text))
            payloads.append(NotificationPayload(visualContent: VisualContent(title: text, body: text)))
            payloads.append(
                NotificationPayload(
                    rawContent: text, visualContent: VisualContent(title: "t", body: text.isEmpty ? nil : text)))
        }
        for payload in payloads {
            let expected = String(decoding: try encoder.encode(payload), as: UTF8.self)
            #expect(payload.storedJSON == expected)
            #expect(try JSONDecoder().decode(NotificationPayload.self, from: Data(payload.storedJSON.utf8)) == payload)
            #expect(Hub.encodedSize(of: payload) == expected.utf8.count)
        }
    }
}
