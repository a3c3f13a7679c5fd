import HubCore

/// A JSON value, for the custom keys an APNs payload carries beside `aps`.
///
/// Literals build values directly:
///
/// ```swift
/// let custom: [String: APNSJSON] = ["hub": ["app": "notes.contoso.com", "v": 42], "urgent": true]
/// ```
///
/// JSON's grammar is closed, so this is an enum: no new case will ever be added.
public enum APNSJSON: Sendable, Hashable {
    case string(String)
    case integer(Int)
    /// A finite number; NaN and infinities cannot be encoded and make the payload invalid.
    case number(Double)
    case bool(Bool)
    case array([APNSJSON])
    /// Keys are written in sorted order, so the same value always encodes to the same bytes.
    case object([String: APNSJSON])
    case null
}

extension APNSJSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: APNSJSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, APNSJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

/// Writes compact JSON into a byte array: strings escaped per RFC 8259, non-ASCII text kept as UTF-8.
///
/// Objects are written key by key; the writer inserts the commas. It never produces invalid JSON:
/// a non-finite number throws instead.
struct APNSJSONWriter {
    private(set) var bytes: [UInt8] = []
    /// One entry per open object or array: whether the next member needs a comma first.
    private var needsComma: [Bool] = []
    /// Set between a key and its value, which then needs no comma.
    private var afterKey = false

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Writes `"key":`; the value written next belongs to it.
    mutating func key(_ key: String) {
        separate()
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func string(_ value: String) {
        separate()
        writeString(value)
    }

    mutating func integer(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func number(_ value: Double) throws(APNSError) {
        guard value.isFinite else {
            throw APNSError(.invalidPayload, "the number \(value) cannot be written as JSON")
        }
        separate()
        if value == value.rounded(.towardZero), abs(value) < 1e15 {
            bytes.append(contentsOf: String(Int64(value)).utf8)
        } else {
            bytes.append(contentsOf: "\(value)".utf8)
        }
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func value(_ value: APNSJSON) throws(APNSError) {
        switch value {
        case .string(let text): string(text)
        case .integer(let number): integer(number)
        case .number(let number): try self.number(number)
        case .bool(let flag): bool(flag)
        case .null:
            separate()
            bytes.append(contentsOf: "null".utf8)
        case .array(let elements):
            separate()
            bytes.append(UInt8(ascii: "["))
            needsComma.append(false)
            for element in elements { try self.value(element) }
            needsComma.removeLast()
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            beginObject()
            for name in members.keys.sorted() {
                key(name)
                try self.value(members[name]!)
            }
            endObject()
        }
    }

    /// Adds the comma between members, except right after a key.
    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = needsComma.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    private mutating func writeString(_ text: String) {
        JSONEscaping.appendQuoted(text, escapingSlashes: false, to: &bytes)
    }
}
