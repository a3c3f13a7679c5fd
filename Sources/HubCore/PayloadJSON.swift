/// The JSON text of a payload as the stores keep it: exactly what `JSONEncoder` with
/// `.sortedKeys` writes (keys in order, absent fields left out, `/` escaped as `\/`, control
/// characters as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx`), written directly. Rows written before
/// keep comparing equal, and every publish skips a `JSONEncoder` (~1% of its CPU, most of it
/// generic code the runtime resolves per call).
extension NotificationPayload {
    public var storedJSON: String {
        var json = JSONWriter(
            capacity: 32 + (rawContent?.utf8.count ?? 0)
                + (visualContent.map { $0.title.utf8.count + ($0.body?.utf8.count ?? 0) } ?? 0)
                + (visualContent?.localisationTexts.reduce(0) { $0 + $1.utf8.count + 3 } ?? 0),
            escapingSlashes: true)
        write(to: &json)
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// The payload object, keys in `JSONEncoder`'s sorted order and absent fields left out: the
    /// stores' text (``storedJSON``) and the API's `payload` member, which differ only in how the
    /// writer escapes `/`. A transport whose provider carries the hub's payload as it is writes it
    /// with this.
    /// - Parameter json: the writer the object is appended to, as its next value.
    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("rawContent", rawContent)
            guard let visualContent else { return }
            json.key("visualContent")
            json.object { json in
                json.member("badge", visualContent.badge)
                json.member("body", visualContent.body)
                json.members("bodyLocArgs", visualContent.bodyLocArgs)
                json.member("bodyLocKey", visualContent.bodyLocKey)
                if let tile = visualContent.tile {
                    json.key("tile")
                    json.bool(tile)
                }
                json.member("title", visualContent.title)
                json.members("titleLocArgs", visualContent.titleLocArgs)
                json.member("titleLocKey", visualContent.titleLocKey)
            }
        }
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
