import Foundation
import HubCore
import Testing

@testable import HubAPNS

@Suite("APNs payload builder: keys, types, limits, trimming")
struct APNSPayloadTests {
    private func text(_ payload: APNSPayload, trimming: Bool = false) throws -> String {
        String(decoding: try payload.encoded(trimmingAlertBody: trimming), as: UTF8.self)
    }

    private func object(_ payload: APNSPayload) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(try payload.encoded())) as? [String: Any])
    }

    @Test("a background payload is exactly content-available plus the custom keys, sorted")
    func background() throws {
        let payload = APNSPayload.background(
            APNSBackgroundPayload(custom: ["hub": ["v": 7, "app": "notes.contoso.com"], "a": [true, nil, 1.5]]))
        #expect(payload.pushType == .background && payload.priority == .considerate)
        #expect(
            try text(payload)
                == #"{"aps":{"content-available":1},"a":[true,null,1.5],"hub":{"app":"notes.contoso.com","v":7}}"#)
    }

    @Test("an alert payload writes every aps key Apple defines, with Apple's names")
    func alertKeys() throws {
        var alert = APNSAlert(title: "T", subtitle: "S", body: "B", launchImage: "launch.png")
        alert.titleLocalization = APNSLocalizedText(key: "TITLE", arguments: ["a"])
        alert.subtitleLocalization = APNSLocalizedText(key: "SUB", arguments: ["b", "c"])
        alert.bodyLocalization = APNSLocalizedText(key: "BODY", arguments: ["d"])
        alert.actionLocalizationKey = "OPEN"
        let payload = APNSPayload.alert(
            APNSAlertPayload(
                alert: alert, badge: 3, sound: .critical(name: "alarm.caf", volume: 0.5), threadID: "thread",
                category: "MEETING", contentAvailable: true, mutableContent: true, targetContentID: "window-1",
                interruptionLevel: .timeSensitive, relevanceScore: 0.75, filterCriteria: "work",
                custom: ["k": "v"]),
            priority: .considerate)
        let root = try object(payload)
        let aps = try #require(root["aps"] as? [String: Any])
        let alertObject = try #require(aps["alert"] as? [String: Any])
        #expect(alertObject["title"] as? String == "T" && alertObject["subtitle"] as? String == "S")
        #expect(alertObject["body"] as? String == "B" && alertObject["launch-image"] as? String == "launch.png")
        #expect(
            alertObject["title-loc-key"] as? String == "TITLE" && alertObject["title-loc-args"] as? [String] == ["a"])
        #expect(alertObject["subtitle-loc-key"] as? String == "SUB")
        #expect(alertObject["subtitle-loc-args"] as? [String] == ["b", "c"])
        #expect(alertObject["loc-key"] as? String == "BODY" && alertObject["loc-args"] as? [String] == ["d"])
        #expect(alertObject["action-loc-key"] as? String == "OPEN")
        #expect(aps["badge"] as? Int == 3)
        let sound = try #require(aps["sound"] as? [String: Any])
        #expect(sound["critical"] as? Int == 1 && sound["name"] as? String == "alarm.caf")
        #expect(sound["volume"] as? Double == 0.5)
        #expect(aps["thread-id"] as? String == "thread" && aps["category"] as? String == "MEETING")
        #expect(aps["content-available"] as? Int == 1 && aps["mutable-content"] as? Int == 1)
        #expect(aps["target-content-id"] as? String == "window-1")
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect(aps["relevance-score"] as? Double == 0.75 && aps["filter-criteria"] as? String == "work")
        #expect(root["k"] as? String == "v")
        #expect(payload.pushType == .alert && payload.priority == .considerate)
    }

    @Test("a named sound is a string; text is escaped as JSON requires")
    func escaping() throws {
        let payload = APNSPayload.alert(
            APNSAlertPayload(alert: APNSAlert(title: "say \"hi\"\\", body: "line\nnext\t\u{1}😀"), sound: .default))
        #expect(
            try text(payload)
                == #"{"aps":{"alert":{"title":"say \"hi\"\\","body":"line\nnext\t\u0001😀"},"sound":"default"}}"#)
    }

    @Test("wrong payloads are refused before sending, with what is wrong")
    func invalid() {
        let cases: [(APNSPayload, String)] = [
            (.background(APNSBackgroundPayload(custom: ["aps": 1])), "reserved"),
            (.alert(APNSAlertPayload(alert: APNSAlert(title: "t"), badge: -1)), "badge"),
            (.alert(APNSAlertPayload(alert: APNSAlert(title: "t"), relevanceScore: 1.5)), "relevance"),
            (.alert(APNSAlertPayload(alert: APNSAlert())), "show something"),
            (.voip(APNSVoIPPayload(custom: ["x": .number(.nan)])), "cannot be written"),
        ]
        for (payload, fragment) in cases {
            #expect {
                _ = try payload.encoded()
            } throws: { error in
                (error as? APNSError)?.code == .invalidPayload && "\(error)".contains(fragment)
            }
        }
    }

    @Test("trimming shortens the body on a Character boundary with an ellipsis until it fits 4096 bytes")
    func trimming() throws {
        let family = "👨‍👩‍👧"  // one Character of 18 UTF-8 bytes
        let payload = APNSPayload.alert(
            APNSAlertPayload(alert: APNSAlert(title: "Family", body: String(repeating: family, count: 400))))
        #expect {
            _ = try payload.encoded()
        } throws: { ($0 as? APNSError)?.code == .payloadTooLarge }
        let bytes = try payload.encoded(trimmingAlertBody: true)
        #expect(bytes.count <= 4096 && bytes.count > 4096 - 18 - 3)
        let aps = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])["aps"]
        let body = try #require(((aps as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String)
        #expect(body.hasSuffix("…"))
        #expect(body.dropLast().allSatisfy { $0 == Character(family) })
    }

    @Test("a payload whose other keys cannot fit is refused even with trimming; VoIP allows 5120 bytes")
    func limits() throws {
        let hugeCustom = APNSPayload.alert(
            APNSAlertPayload(
                alert: APNSAlert(title: "t", body: "b"), custom: ["x": .string(String(repeating: "x", count: 5000))]))
        #expect(throws: APNSError.self) { try hugeCustom.encoded(trimmingAlertBody: true) }
        let hugeTitle = APNSPayload.alert(
            APNSAlertPayload(alert: APNSAlert(title: String(repeating: "x", count: 5000), body: "b")))
        #expect(try hugeTitle.encoded(trimmingAlertBody: true).count <= 4096, "the title is cut after the body")
        let data: [String: APNSJSON] = ["data": .string(String(repeating: "y", count: 5000))]
        #expect(try APNSPayload.voip(APNSVoIPPayload(custom: data)).encoded().count > 4096)
        #expect(throws: APNSError.self) { try APNSPayload.background(APNSBackgroundPayload(custom: data)).encoded() }
    }

    @Test("push types carry Apple's topic suffixes and limits; unknown names stay usable")
    func pushTypes() {
        #expect(APNSPushType.voip.topic(forBundleID: "com.a.b") == "com.a.b.voip")
        #expect(APNSPushType.complication.topicSuffix == ".complication")
        #expect(APNSPushType.fileprovider.topicSuffix == ".pushkit.fileprovider")
        #expect(APNSPushType.liveactivity.topicSuffix == ".push-type.liveactivity")
        #expect(APNSPushType.location.topicSuffix == ".location-query")
        #expect(APNSPushType.pushtotalk.topicSuffix == ".voip-ptt")
        #expect(APNSPushType.widgets.topicSuffix == ".push-type.widgets")
        #expect(APNSPushType.controls.topicSuffix == ".push-type.controls")
        #expect(APNSPushType(rawValue: "voip").payloadLimit == 5120)
        #expect(APNSPushType(rawValue: "future").rawValue == "future")
    }

    @Test("collapse IDs fit 64 bytes, cut on a character boundary, and stay distinct when hashed")
    func collapseIDs() {
        #expect(APNSCollapseID("meeting-42").value == "meeting-42")
        let long = String(repeating: "é", count: 60)
        let a = APNSCollapseID(long + "a")
        let b = APNSCollapseID(long + "b")
        #expect(a.value.utf8.count <= 64 && b.value.utf8.count <= 64)
        #expect(a != b)
        #expect(a.value.hasPrefix(String(repeating: "é", count: 23) + "~"))
    }

    @Test("reasons map Apple's strings, the variant spelling, and unknown ones")
    func reasons() {
        #expect(APNSError.Reason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyIdInToken)
        #expect(APNSError.Reason(rawValue: "Unregistered").isKnown)
        let unknown = APNSError.Reason(rawValue: "BrandNewReason")
        #expect(!unknown.isKnown && unknown == .unknown("BrandNewReason"))
        #expect(unknown.action(status: 503) == .retry && unknown.action(status: 400) == .fixRequest)
        #expect(unknown.action(status: 403) == .fixConfiguration, "an unknown 403 refuses the credentials")
    }
}
