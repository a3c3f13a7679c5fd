import Foundation
import HubCore
import HubWire

// The hot resources (a notification, a feed page, a history) are written straight to bytes:
// Foundation's JSONEncoder with a custom date strategy was ~4% of a publish's CPU. The output is
// what `JSON.encoder()` would make: keys sorted, `nil` left out, `/` unescaped, times as
// `2025-01-31T12:00:00.000Z` (tests compare it with the types' synthesized Encodable conformance).

/// A resource that writes its own JSON, the same as its synthesized `Encodable` conformance would
/// through `JSON.encoder()` (tests compare the two; `JSON.response` and `JSON.data` pick the writer).
protocol JSONWritable: Encodable, Sendable {
    func write(to json: inout JSONWriter)
}

/// Appends JSON to a byte buffer. Objects take their keys in sorted order from the caller.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the next member or element needs a comma first.
    private var needsComma = false

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func array<Element>(_ elements: some Sequence<Element>, _ body: (inout JSONWriter, Element) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in elements { body(&self, element) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member's key; the value follows.
    mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        needsComma = false
    }

    mutating func string(_ value: String) {
        separate()
        Self.appendQuoted(value, to: &bytes)
        needsComma = true
    }

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    mutating func date(_ value: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        Self.appendISO8601(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Members whose value is `nil` are left out, as JSONEncoder does.
    mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    mutating func member(_ name: StaticString, _ value: Date?) {
        guard let value else { return }
        key(name)
        date(value)
    }

    mutating func member(_ name: StaticString, _ value: (some BinaryInteger)?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    /// An array of strings; left out when `nil`.
    mutating func members(_ name: StaticString, _ values: [String]?) {
        guard let values else { return }
        key(name)
        array(values) { json, value in json.string(value) }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// `value` as a JSON string: `"` and `\` escaped, controls as `\n`, `\t`, … or `\u00XX`,
    /// everything else (`/` and non-ASCII included) as it is.
    static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
        JSONEscaping.appendQuoted(value, escapingSlashes: false, to: &bytes)
    }

    /// `2025-01-31T12:00:00.000Z`: UTC, milliseconds truncated (as `JSON.dateStyle` formats).
    static func appendISO8601(_ date: Date, to bytes: inout [UInt8]) {
        // Split as Foundation's calendar does (whole seconds since 2001, then the fraction), so that
        // the milliseconds are the same digits, including where a Double's precision runs out.
        let sinceReference = date.timeIntervalSinceReferenceDate
        let whole = sinceReference.rounded(.down)
        let millisecond = Int64((sinceReference - whole) * 1_000_000_000) / 1_000_000
        let seconds = Int64(whole) + 978_307_200
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        appendDigits(year, count: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(day, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendDigits(millisecond, count: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }

    private static func appendDigits(_ value: Int64, count: Int, to bytes: inout [UInt8]) {
        var digits = String(value)
        if digits.utf8.count < count { digits = String(repeating: "0", count: count - digits.utf8.count) + digits }
        bytes.append(contentsOf: digits.utf8)
    }
}

// MARK: The hot resources

extension NotificationResource: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("appNotificationId", appNotificationId)
            json.member("changeVersion", changeVersion)
            json.member("createdDateTime", createdDateTime)
            json.member("displayTimeToLive", displayTimeToLive)
            json.member("expirationDateTime", expirationDateTime)
            json.member("groupName", groupName)
            json.member("id", id)
            json.member("lastModifiedDateTime", lastModifiedDateTime)
            json.key("payload")
            json.object { json in
                json.member("rawContent", payload.rawContent)
                if let visual = payload.visualContent {
                    json.key("visualContent")
                    json.object { json in
                        json.member("badge", visual.badge)
                        json.member("body", visual.body)
                        json.members("bodyLocArgs", visual.bodyLocArgs)
                        json.member("bodyLocKey", visual.bodyLocKey)
                        if let tile = visual.tile {
                            json.key("tile")
                            json.bool(tile)
                        }
                        json.member("title", visual.title)
                        json.members("titleLocArgs", visual.titleLocArgs)
                        json.member("titleLocKey", visual.titleLocKey)
                    }
                }
            }
            json.member("priority", priority.rawValue)
            json.member("readState", readState.rawValue)
            json.member("scheduledDateTime", scheduledDateTime)
            json.member("status", status.rawValue)
            json.key("targetPolicy")
            json.object { json in
                json.key("platformTypes")
                json.array(targetPolicy.platformTypes) { json, platform in json.string(platform.rawValue) }
            }
            json.member("userActionState", userActionState.rawValue)
        }
    }
}

extension NotificationList: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.key("notifications")
            json.array(notifications) { json, notification in notification.write(to: &json) }
        }
    }
}

extension FeedPageResource: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.key("changes")
            json.array(changes) { json, change in change.write(to: &json) }
            json.member("cursor", cursor)
            json.key("hasMore")
            json.bool(hasMore)
        }
    }
}
