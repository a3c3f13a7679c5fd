import Foundation

/// The URL-safe base64 alphabet without padding (RFC 4648 §5), as Web Push keys, salts and JWTs use it.
enum Base64URL {
    /// `bytes` in URL-safe base64 without `=` padding.
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of URL-safe (or standard) base64 text, padded or not; `nil` when it is not base64.
    static func decode(_ text: String) -> [UInt8]? {
        var standard = text.trimmingCharacters(in: .whitespaces)
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        if standard.hasSuffix("=") { standard = String(standard.prefix { $0 != "=" }) }
        guard standard.count % 4 != 1 else { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }

    /// Whether `text` uses only the URL-safe base64 alphabet (no padding), as RFC 8030 requires of `Topic`.
    static func isAlphabet(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_")
        }
    }
}
