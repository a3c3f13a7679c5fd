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

extension JSONWriter {
    /// A number; a non-finite one throws instead of writing invalid JSON.
    mutating func number(_ value: Double) throws(APNSError) {
        guard value.isFinite else {
            throw APNSError(.invalidPayload, "the number \(value) cannot be written as JSON")
        }
        if value == value.rounded(.towardZero), abs(value) < 1e15 {
            integer(Int64(value))
        } else {
            literal("\(value)")
        }
    }

    /// `value`, objects with their keys sorted.
    mutating func value(_ value: APNSJSON) throws(APNSError) {
        switch value {
        case .string(let text): string(text)
        case .integer(let number): integer(number)
        case .number(let number): try self.number(number)
        case .bool(let flag): bool(flag)
        case .null: literal("null")
        case .array(let elements):
            beginArray()
            for element in elements { try self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for name in members.keys.sorted() {
                key(name)
                try self.value(members[name]!)
            }
            endObject()
        }
    }
}
