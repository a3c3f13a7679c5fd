// A strict RFC 8259 parser into `JSONValue`. Decoding `JSONValue` through `Decodable` tries each
// kind in turn and throws for every miss (four thrown errors per object); that was ~7% of a
// publish's CPU at 1,000 publishes/s. This parser reads the bytes once.
//
// It accepts exactly the JSON grammar: whitespace around values; no comments, trailing commas,
// leading zeros, `+`, `NaN` or bare fractions; strings without raw control characters; `\u`
// escapes with surrogates in pairs. It refuses what a lenient parser would settle silently:
// duplicate object keys, numbers beyond a Double's range, nesting deeper than `maxDepth`. The
// caller has checked that the bytes are UTF-8.

extension JSONValue {
    /// Why bytes are not the JSON this parser accepts (for logs; clients get a generic 400).
    struct SyntaxError: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Deeper than this, a document is refused (no request body needs a tenth of it).
    static let maxDepth = 128

    /// Parses one JSON text (a value with optional whitespace around it).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(SyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        // A UTF-8 byte order mark is not JSON, but RFC 8259 lets a parser ignore one.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.offset = 3 }
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    static func parse(_ bytes: some Collection<UInt8>) throws(SyntaxError) -> JSONValue {
        let array = Array(bytes)
        do {
            return try array.withUnsafeBytes { buffer in try parse(buffer) }
        } catch let error as SyntaxError {
            throw error
        } catch {
            throw SyntaxError(offset: 0, reason: "\(error)")
        }
    }
}

private struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func error(_ reason: String) -> JSONValue.SyntaxError { .init(offset: offset, reason: reason) }

    var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { offset += 1 }
    }

    mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONValue.SyntaxError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw error("unexpected end") }
        for index in 0..<count where bytes[offset + index] != literal.utf8Start[index] {
            throw error("unknown literal")
        }
        offset += count
        return value
    }

    mutating func value(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    mutating func object(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw error("nested too deeply") }
        offset += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a key") }
            let keyOffset = offset
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            offset += 1
            skipWhitespace()
            let value = try value(depth: depth)
            guard members.updateValue(value, forKey: key) == nil else {
                throw JSONValue.SyntaxError(offset: keyOffset, reason: "duplicate key")
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    mutating func array(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw error("nested too deeply") }
        offset += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    mutating func number() throws(JSONValue.SyntaxError) -> Double {
        let start = offset
        if current == UInt8(ascii: "-") { offset += 1 }
        guard let first = current, isDigit(first) else { throw error("expected a digit") }
        offset += 1
        if first != UInt8(ascii: "0") {
            while let byte = current, isDigit(byte) { offset += 1 }
        } else if let byte = current, isDigit(byte) {
            throw error("leading zero")
        }
        if current == UInt8(ascii: ".") {
            offset += 1
            guard let byte = current, isDigit(byte) else { throw error("expected a digit after '.'") }
            while let byte = current, isDigit(byte) { offset += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard let byte = current, isDigit(byte) else { throw error("expected a digit in the exponent") }
            while let byte = current, isDigit(byte) { offset += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONValue.SyntaxError(offset: start, reason: "number out of range")
        }
        return value
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    mutating func string() throws(JSONValue.SyntaxError) -> String {
        offset += 1  // opening quote
        let start = offset
        // The common case: no escape, copied in one go.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw error("control character in a string") }
            offset += 1
        }
        guard let stop = current else { throw error("unterminated string") }
        if stop == UInt8(ascii: "\"") {
            offset += 1
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset - 1]), as: UTF8.self)
        }
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
        while true {
            guard let byte = current else { throw error("unterminated string") }
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw error("unterminated string") }
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): try appendEscapedScalar(to: &utf8)
                default: throw error("unknown escape")
                }
            case 0x00..<0x20:
                throw error("control character in a string")
            default:
                utf8.append(byte)
            }
        }
    }

    /// After `\u`: four hex digits, and for a high surrogate the `\uXXXX` of its low surrogate.
    mutating func appendEscapedScalar(to utf8: inout [UInt8]) throws(JSONValue.SyntaxError) {
        let unit = try hexUnit()
        var scalarValue = UInt32(unit)
        if (0xD800...0xDBFF).contains(unit) {
            guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
            else { throw error("a high surrogate without its low surrogate") }
            offset += 2
            let low = try hexUnit()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("a high surrogate without its low surrogate") }
            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(unit) {
            throw error("a low surrogate alone")
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw error("not a Unicode scalar") }
        utf8.append(contentsOf: UTF8.encode(scalar)!)
    }

    mutating func hexUnit() throws(JSONValue.SyntaxError) -> UInt16 {
        guard offset + 4 <= bytes.count else { throw error("unterminated \\u escape") }
        var unit: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected a hex digit")
            }
            unit = unit << 4 | UInt16(digit)
            offset += 1
        }
        return unit
    }
}
