import HTTPTypes

// Small text operations of every request, in plain UTF-8: Foundation's `trimmingCharacters(in:)`,
// `addingPercentEncoding` and `removingPercentEncoding` bridge through NSString and build
// character sets per call, which was ~5% of a publish's CPU.

enum HTTPText {
    /// `text` without leading and trailing spaces and horizontal tabs (HTTP's optional whitespace).
    static func trimmed(_ text: Substring) -> Substring {
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, isOWS(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isOWS(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return text[start..<end]
    }

    /// The credentials of an `Authorization: Bearer <token>` header (scheme case-insensitive), trimmed;
    /// `nil` for another scheme or an empty token.
    static func bearerToken(_ header: String) -> String? {
        let text = trimmed(header[...])
        guard let space = text.utf8.firstIndex(where: isOWS) else { return nil }
        let scheme = text[..<space]
        guard scheme.utf8.count == 6, scheme.utf8.elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else {
            return nil
        }
        let token = trimmed(text[space...])
        return token.isEmpty ? nil : String(token)
    }

    /// `value` percent-encoded for a query parameter's value: every byte but the unreserved
    /// characters of RFC 3986 (so `&`, `=`, `+`, `#` and `%` are encoded).
    static func queryValue(_ value: String) -> String {
        percentEncoded(value, keeping: isUnreservedByte)
    }

    /// `value` percent-encoded for one path segment: every byte but the unreserved characters
    /// and the sub-delimiters `:` and `@` of RFC 3986 (`/`, `;`, `%` and `?` are encoded).
    static func pathSegment(_ value: String) -> String {
        percentEncoded(value, keeping: isSegmentByte)
    }

    /// `value` with every UTF-8 byte that `keeps` refuses written as `%XX`.
    private static func percentEncoded(_ value: String, keeping keeps: (UInt8) -> Bool) -> String {
        guard value.utf8.contains(where: { !keeps($0) }) else { return value }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 16)
        for byte in value.utf8 {
            if keeps(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// RFC 3986's unreserved characters: letters, digits, `-`, `.`, `_`, `~`.
    private static func isUnreservedByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func isSegmentByte(_ byte: UInt8) -> Bool {
        if isUnreservedByte(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"),
            UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: "="), UInt8(ascii: ":"),
            UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }
}

extension HTTPFields {
    /// The value of the field `name`, as `self[name]` gives it, without its cost when the field
    /// appears at most once (every request reads a few fields: `self[name]` joins a lazy sequence
    /// through unspecialized generic code, ~1% of a publish's CPU). Fields that repeat are joined
    /// by `self[name]`, with its separators.
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}
