public import struct Foundation.Date

// A JSON writer straight to bytes, for the hub's hot paths (HubServer's resources, the FCM
// plugin's request bodies): JSONEncoder with custom strategies costs several percent of a
// publish's CPU. Public: a transport writes its provider's request bodies with it (HubTransportKit).

/// Appends JSON to a byte buffer, without `JSONEncoder`: what the first-party transports write
/// their providers' request bodies with.
///
/// Objects take their keys in the order the caller writes them (write them sorted to match
/// `JSONEncoder` with `.sortedKeys`). Members whose value is `nil` are left out.
///
/// ```swift
/// var json = JSONWriter()
/// json.object { json in
///     json.member("token", endpoint.token)
///     json.key("ttl")
///     json.integer(notification.secondsToExpiry(now: now))
/// }
/// let body: [UInt8] = json.bytes
/// ```
public struct JSONWriter {
    /// The JSON written so far.
    public var bytes: [UInt8] = []
    /// Whether the next member or element needs a comma first.
    @usableFromInline var needsComma = false
    /// Whether strings write `/` as `\/`, as `JSONEncoder` does by default (the stores' payload
    /// text); the API's resources leave it as it is.
    @usableFromInline let escapingSlashes: Bool

    /// - Parameters:
    ///   - capacity: the bytes to reserve up front (a guess at the body's size).
    ///   - escapingSlashes: whether strings write `/` as `\/`, as `JSONEncoder` does by default.
    @inlinable public init(capacity: Int = 512, escapingSlashes: Bool = false) {
        self.escapingSlashes = escapingSlashes
        bytes.reserveCapacity(capacity)
    }

    /// An object: `body` writes its members (`key(_:)` then a value, or `member(_:_:)`).
    /// - Parameter body: writes the members.
    @inlinable public mutating func object(_ body: (inout JSONWriter) -> Void) {
        beginObject()
        body(&self)
        endObject()
    }

    /// An array of `elements`, each written by `body`.
    /// - Parameters:
    ///   - elements: the elements, in order.
    ///   - body: writes one element as a value.
    @inlinable public mutating func array<Element>(
        _ elements: some Sequence<Element>, _ body: (inout JSONWriter, Element) -> Void
    ) {
        beginArray()
        for element in elements { body(&self, element) }
        endArray()
    }

    /// Opens an object; its members follow, then ``endObject()``. For writers whose members may
    /// throw (``object(_:)`` takes a closure that does not).
    @inlinable public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Closes the object ``beginObject()`` opened.
    @inlinable public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Opens an array; its elements follow, then ``endArray()``.
    @inlinable public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Closes the array ``beginArray()`` opened.
    @inlinable public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A value already in JSON form (a number, `null`).
    /// - Parameter json: the JSON text, written as it is.
    @inlinable public mutating func literal(_ json: String) {
        separate()
        bytes.append(contentsOf: json.utf8)
        needsComma = true
    }

    /// A member's key; the value follows.
    /// - Parameter key: the key, written without escaping (a literal needs none).
    @inlinable public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        needsComma = false
    }

    /// A member's key that is not a literal (a map's keys), escaped; the value follows.
    /// - Parameter key: the key.
    @inlinable public mutating func key(_ key: String) {
        separate()
        JSONEscaping.appendQuoted(key, escapingSlashes: escapingSlashes, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A string value, escaped.
    /// - Parameter value: the string.
    @inlinable public mutating func string(_ value: String) {
        separate()
        JSONEscaping.appendQuoted(value, escapingSlashes: escapingSlashes, to: &bytes)
        needsComma = true
    }

    /// An integer value, in decimal.
    /// - Parameter value: the integer.
    @inlinable public mutating func integer(_ value: some BinaryInteger) {
        separate()
        Self.appendDecimal(value, to: &bytes)
        needsComma = true
    }

    /// `value` in decimal, as `String(value)` writes it, without making that string (it was the
    /// dearest step of an APNs payload: generic, and an allocation per number).
    /// - Parameters:
    ///   - value: the integer.
    ///   - bytes: the buffer it is appended to.
    @inlinable public static func appendDecimal(_ value: some BinaryInteger, to bytes: inout [UInt8]) {
        guard let small = Int64(exactly: value) else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        if small < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = small.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    /// `true` or `false`.
    /// - Parameter value: the value.
    @inlinable public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    /// A date as an ISO 8601 string in UTC with milliseconds: `"2025-01-31T12:00:00.000Z"`.
    /// - Parameter value: the date.
    @inlinable public mutating func date(_ value: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        Self.appendISO8601(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A string member; left out when `value` is `nil`, as JSONEncoder does.
    /// - Parameters:
    ///   - name: the key.
    ///   - value: the string.
    @inlinable public mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    /// A date member (as ``date(_:)`` writes it); left out when `value` is `nil`.
    /// - Parameters:
    ///   - name: the key.
    ///   - value: the date.
    @inlinable public mutating func member(_ name: StaticString, _ value: Date?) {
        guard let value else { return }
        key(name)
        date(value)
    }

    /// An integer member; left out when `value` is `nil`.
    /// - Parameters:
    ///   - name: the key.
    ///   - value: the integer.
    @inlinable public mutating func member(_ name: StaticString, _ value: (some BinaryInteger)?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    /// An array of strings; left out when `nil`.
    /// - Parameters:
    ///   - name: the key.
    ///   - values: the strings.
    @inlinable public mutating func members(_ name: StaticString, _ values: [String]?) {
        guard let values else { return }
        key(name)
        array(values) { json, value in json.string(value) }
    }

    @inlinable mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// `value` as a JSON string: `"` and `\` escaped, controls as `\n`, `\t`, … or `\u00XX`,
    /// everything else (`/` and non-ASCII included) as it is.
    /// - Parameters:
    ///   - value: the string.
    ///   - bytes: the buffer it is appended to.
    @inlinable public static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
        JSONEscaping.appendQuoted(value, escapingSlashes: false, to: &bytes)
    }

    /// `2025-01-31T12:00:00.000Z`: UTC, milliseconds truncated (as `JSON.dateStyle` formats).
    @usableFromInline package static func appendISO8601(_ date: Date, to bytes: inout [UInt8]) {
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
