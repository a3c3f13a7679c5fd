import Foundation
import HubCore
import Testing

@testable import HubServer

/// The hand-written JSON of the hot resources must be byte for byte what `JSON.encoder()` makes of
/// them through their synthesized `Encodable` conformance (the API's JSON conventions, DESIGN §4):
/// a field added to a resource and not to its writer fails here.
@Suite("JSON writer")
struct JSONWriterTests {
    static let awkward: [String] = [
        "", "plain", "quote \" and backslash \\", "a/b//c", "tab\there\nnew line\r\u{8}\u{C}",
        String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }), "\u{7F}\u{85}\u{2028}\u{2029}", "été 日本語 🙂",
        "</script>", "\u{FEFF}bom",
    ]

    static func notifications() -> [UserNotification] {
        let base = Date(timeIntervalSince1970: 1_764_000_000.123_456)
        return [
            UserNotification(
                id: "n1", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-1",
                payload: NotificationPayload(rawContent: "raw"), expirationDateTime: base.addingTimeInterval(86_400),
                createdDateTime: base, lastModifiedDateTime: base),
            UserNotification(
                id: "n2", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a \"2\"/x",
                groupName: "group\n1", priority: .high,
                payload: NotificationPayload(
                    rawContent: awkward[5], visualContent: VisualContent(title: "Title 🙂", body: awkward[4])),
                targetPolicy: TargetPolicy(platformTypes: [.ios, .android]), displayTimeToLive: 3600,
                expirationDateTime: Date(timeIntervalSince1970: 4_102_444_799.999_9), fallbackPolicy: nil,
                createdDateTime: Date(timeIntervalSince1970: 0),
                lastModifiedDateTime: Date(timeIntervalSince1970: 951_782_400.5),
                readState: .read, userActionState: .dismissed, status: .deleted, changeVersion: 9_007_199_254_740_993),
            UserNotification(
                id: "n3", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-3",
                payload: NotificationPayload(visualContent: VisualContent(title: "only a title")),
                expirationDateTime: base, createdDateTime: base, lastModifiedDateTime: base),
            UserNotification(
                id: "n5", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-5",
                payload: NotificationPayload(
                    visualContent: VisualContent(
                        title: "t", body: "b", titleLocKey: "T/KEY", titleLocArgs: [awkward[4], ""],
                        bodyLocKey: "B", bodyLocArgs: [], badge: 0, tile: true)),
                expirationDateTime: base, createdDateTime: base, lastModifiedDateTime: base),
            UserNotification(
                id: "n6", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-6",
                payload: NotificationPayload(visualContent: VisualContent(title: "t", badge: 99, tile: false)),
                expirationDateTime: base, createdDateTime: base, lastModifiedDateTime: base),
            UserNotification(
                id: "n4", appId: "notes.contoso.com", userId: "alice", appNotificationId: "a-4",
                payload: NotificationPayload(), expirationDateTime: base, createdDateTime: base,
                lastModifiedDateTime: base),
        ]
    }

    @Test("strings are escaped as JSONEncoder escapes them", arguments: awkward)
    func strings(value: String) throws {
        var bytes: [UInt8] = []
        JSONWriter.appendQuoted(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: try JSON.data(value), as: UTF8.self))
    }

    @Test("integers are written as String(_:) writes them, at the edges of every width")
    func integers() {
        var generator = SystemRandomNumberGenerator()
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 1_000_000, .max, .min, .max - 1, .min + 1]
        values += (0..<5_000).map { _ in Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...63)
        }
        for value in values {
            var bytes: [UInt8] = []
            JSONWriter.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
        for value in [UInt64.max, UInt64(Int64.max) + 1] {
            var bytes: [UInt8] = []
            JSONWriter.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
        var writer = JSONWriter()
        writer.beginArray()
        for value in [Int8.min, 0, Int8.max] { writer.integer(value) }
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[-128,0,127]")
    }

    @Test("times are formatted as JSON.dateStyle formats them, across eras and fractions")
    func dates() throws {
        var generator = SystemRandomNumberGenerator()
        var dates = [0, -0.001, -1, -86_400.5, 951_782_400, 1_709_164_800.999, 4_102_444_799.9999, 253_402_300_799]
            .map { Date(timeIntervalSince1970: $0) }
        dates += (0..<20_000).map { _ in Date(timeIntervalSince1970: Double.random(in: -2e9...8e9, using: &generator)) }
        for date in dates {
            var bytes: [UInt8] = []
            JSONWriter.appendISO8601(date, to: &bytes)
            #expect(
                String(decoding: bytes, as: UTF8.self) == date.formatted(JSON.dateStyle),
                "\(date.timeIntervalSince1970)")
        }
    }

    @Test("a notification, a history and a feed page write what their Encodable conformance encodes")
    func resources() throws {
        let encoder = JSON.encoder()
        func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
        let resources = Self.notifications().map(NotificationResource.init)
        for resource in resources {
            #expect(text(JSON.data(resource)) == text(try encoder.encode(resource)))
        }
        for list in [NotificationList(notifications: resources), NotificationList(notifications: [])] {
            #expect(text(JSON.data(list)) == text(try encoder.encode(list)))
        }
        for hasMore in [true, false] {
            let page = FeedPageResource(changes: resources, cursor: "c/ur\"sor", hasMore: hasMore)
            #expect(text(JSON.data(page)) == text(try encoder.encode(page)))
        }
    }
}
