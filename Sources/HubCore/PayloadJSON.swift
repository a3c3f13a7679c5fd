/// The JSON text of a payload as the stores keep it: exactly what `JSONEncoder` with
/// `.sortedKeys` writes (keys in order, absent fields left out, `/` escaped as `\/`, control
/// characters as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx`), written directly. Rows written before
/// keep comparing equal, and every publish skips a `JSONEncoder` (~1% of its CPU, most of it
/// generic code the runtime resolves per call).
extension NotificationPayload {
    public var storedJSON: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(
            32 + (rawContent?.utf8.count ?? 0)
                + (visualContent.map { $0.title.utf8.count + ($0.body?.utf8.count ?? 0) } ?? 0)
                + (visualContent?.localisationTexts.reduce(0) { $0 + $1.utf8.count + 3 } ?? 0))
        bytes.append(UInt8(ascii: "{"))
        var first = true
        StoredJSON.appendMember("rawContent", rawContent, first: &first, to: &bytes)
        if let visualContent {
            StoredJSON.appendKey("visualContent", first: &first, to: &bytes)
            bytes.append(UInt8(ascii: "{"))
            var innerFirst = true
            // Keys in JSONEncoder's sorted order.
            if let badge = visualContent.badge {
                StoredJSON.appendKey("badge", first: &innerFirst, to: &bytes)
                bytes.append(contentsOf: String(badge).utf8)
            }
            StoredJSON.appendMember("body", visualContent.body, first: &innerFirst, to: &bytes)
            StoredJSON.appendMember("bodyLocArgs", visualContent.bodyLocArgs, first: &innerFirst, to: &bytes)
            StoredJSON.appendMember("bodyLocKey", visualContent.bodyLocKey, first: &innerFirst, to: &bytes)
            if let tile = visualContent.tile {
                StoredJSON.appendKey("tile", first: &innerFirst, to: &bytes)
                bytes.append(contentsOf: (tile ? "true" : "false").utf8)
            }
            StoredJSON.appendMember("title", visualContent.title, first: &innerFirst, to: &bytes)
            StoredJSON.appendMember("titleLocArgs", visualContent.titleLocArgs, first: &innerFirst, to: &bytes)
            StoredJSON.appendMember("titleLocKey", visualContent.titleLocKey, first: &innerFirst, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

enum StoredJSON {
    static func appendKey(_ key: StaticString, first: inout Bool, to bytes: inout [UInt8]) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// `"key":"value"`, escaped as `JSONEncoder` does; nothing when `value` is `nil`.
    static func appendMember(_ key: StaticString, _ value: String?, first: inout Bool, to bytes: inout [UInt8]) {
        guard let value else { return }
        appendKey(key, first: &first, to: &bytes)
        JSONEscaping.appendQuoted(value, escapingSlashes: true, to: &bytes)
    }

    /// `"key":["value",…]`; nothing when `values` is `nil`.
    static func appendMember(_ key: StaticString, _ values: [String]?, first: inout Bool, to bytes: inout [UInt8]) {
        guard let values else { return }
        appendKey(key, first: &first, to: &bytes)
        appendStrings(values, to: &bytes)
    }

    static func appendStrings(_ values: [String], to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONEscaping.appendQuoted(value, escapingSlashes: true, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

/// JSON strings written byte by byte, for the hub's own JSON writers.
public enum JSONEscaping {
    /// `value` as a JSON string: `"` and `\` escaped, controls as `\b`, `\t`, `\n`, `\f`, `\r` or
    /// `\u00xx`, `/` as `\/` when `escapingSlashes` (as `JSONEncoder` does by default), everything
    /// else (non-ASCII included) as it is.
    public static func appendQuoted(_ value: String, escapingSlashes: Bool, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case UInt8(ascii: "/") where escapingSlashes:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x00..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
