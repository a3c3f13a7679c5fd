/// Text for HTML and XML documents (the console's pages, WNS's toast, tile and badge bodies): what
/// a transport whose provider takes XML escapes the notification's text with.
public enum MarkupEscaping {
    /// `text` with the five characters that matter in text and quoted attributes replaced by
    /// character references: `&`, `<`, `>`, `"` and `'` (as `apostrophe`).
    /// - Parameters:
    ///   - text: the text to escape.
    ///   - apostrophe: what `'` becomes: `&apos;` in XML, `&#39;` in HTML.
    ///   - droppingXMLForbidden: drop the characters XML 1.0 forbids (controls but tab, line
    ///     feed and carriage return; U+FFFE and U+FFFF) instead of keeping them.
    /// - Returns: the escaped text, for element content or a quoted attribute.
    public static func escape(_ text: String, apostrophe: String, droppingXMLForbidden: Bool = false) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += apostrophe
            case "\t", "\n", "\r": escaped.unicodeScalars.append(scalar)
            default:
                if !droppingXMLForbidden || (scalar.value >= 0x20 && scalar.value != 0xFFFE && scalar.value != 0xFFFF) {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped
    }
}
