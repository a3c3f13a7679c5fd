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
    }
}
