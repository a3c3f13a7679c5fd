import NIOCore

/// The chunk-size line grammar the codec holds chunked bodies to (llhttp's, RFC 9112 7.1).
extension HTTP1ServerCodec {
    /// What the start of a buffer holds of a chunk-size line.
    enum ChunkSizeLine: Equatable {
        /// More bytes are needed.
        case incomplete
        /// Not a chunk-size line, and why.
        case invalid(String)
        /// The chunk's size, and the line's length with its CRLF.
        case complete(size: Int, length: Int)
    }

    /// Reads a chunk-size line as llhttp does (RFC 9112, 7.1): one or more hexadecimal digits,
    /// then extensions — `;` and a name (a token; empty between two `;`), each with an optional
    /// `=` and a token or quoted-string value — then CRLF. No whitespace, no bare CR or LF.
    static func chunkSizeLine(_ buffer: ByteBuffer) -> ChunkSizeLine {
        buffer.withUnsafeReadableBytes { chunkSizeLine($0) }
    }

    static func chunkSizeLine(_ bytes: UnsafeRawBufferPointer) -> ChunkSizeLine {
        enum State { case size, extensions, name, value, quoted, quotedPair, quotedDone, cr }
        var state = State.size
        var size = 0
        var digits = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch state {
            case .size:
                if let digit = hexValue(byte) {
                    guard size <= Int.max >> 8 else { return .invalid("The chunk size is too large.") }
                    size = size << 4 | digit
                    digits += 1
                } else if digits == 0 {
                    return .invalid("A chunk must start with its size in hexadecimal digits.")
                } else if byte == 13 {
                    state = .cr
                } else if byte == UInt8(ascii: ";") {
                    state = .extensions
                } else {
                    return .invalid(
                        "The chunk size may be followed only by ';' and extensions, then CRLF (no whitespace).")
                }
            case .extensions:
                guard byte != 13, byte != UInt8(ascii: " ") else {
                    return .invalid("A chunk extension is empty or starts with whitespace.")
                }
                state = .name
                continue  // the byte is the name's first
            case .name:
                if byte == UInt8(ascii: "=") {
                    state = .value
                } else if byte == UInt8(ascii: ";") {
                    state = .extensions
                } else if byte == 13 {
                    state = .cr
                } else if !isToken(byte) {
                    return .invalid("A chunk extension's name must be a token.")
                }
            case .value:
                if byte == UInt8(ascii: "\"") {
                    state = .quoted
                } else if byte == UInt8(ascii: ";") {
                    state = .extensions
                } else if byte == 13 {
                    state = .cr
                } else if !isToken(byte) {
                    return .invalid("A chunk extension's value must be a token or a quoted string.")
                }
            case .quoted:
                if byte == UInt8(ascii: "\"") {
                    state = .quotedDone
                } else if byte == UInt8(ascii: "\\") {
                    state = .quotedPair
                } else if !(byte == 9 || byte == 0x20 || byte == 0x21 || (0x23...0x5B).contains(byte)
                    || (0x5D...0x7E).contains(byte) || byte >= 0x80)
                {
                    return .invalid("A chunk extension's quoted value holds a control character.")
                }
            case .quotedPair:
                guard byte == 9 || (byte >= 0x20 && byte != 0x7F) else {
                    return .invalid("A chunk extension's quoted value holds a control character.")
                }
                state = .quoted
            case .quotedDone:
                if byte == UInt8(ascii: ";") {
                    state = .extensions
                } else if byte == 13 {
                    state = .cr
                } else {
                    return .invalid("A chunk extension's quoted value must be followed by ';' or CRLF.")
                }
            case .cr:
                guard byte == 10 else { return .invalid("A chunk-size line must end in CRLF, not a bare CR.") }
                return .complete(size: size, length: index + 1)
            }
            index += 1
        }
        return .incomplete
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// An RFC 9110 token character.
    static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
