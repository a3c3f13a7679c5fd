/// Renders `YAMLValue`s as YAML text in the style a hand-written configuration file uses.
///
/// - Mappings are written in block style, one `key: value` per line.
/// - Sequences of scalars are written in flow style (`[a, b]`) when that fits in ``maxWidth``
///   columns; other sequences are block sequences whose mapping items start on the `- ` line and
///   keep their following keys aligned under the first one.
/// - Scalars are plain unless plain style would change or break their meaning; then they are
///   double-quoted with escapes (see ``scalar(_:inFlow:)``).
struct YAMLRenderer: Sendable {
    /// Spaces added per nesting level of block mappings and sequences nested in mappings.
    var indentStep = 2
    /// Whether flow mappings are written `{ a: 1 }` rather than `{a: 1}`.
    var paddedBraces = false
    /// Whether flow sequences are written `[ a, b ]` rather than `[a, b]`.
    var paddedBrackets = false
    /// The column limit used to decide between flow and block style.
    var maxWidth = 100

    // MARK: Scalars

    /// The scalar as a plain scalar when that reads back as the same string, else double-quoted.
    ///
    /// Quoting is used for: the empty string; leading or trailing white space; `: ` or ` #`
    /// inside, or a trailing `:`; a leading indicator character (`-?:,[]{}#&*!|>'"%@` and the
    /// backquote); strings YAML 1.1 or 1.2 resolves to a bool, null, number or timestamp
    /// (`yes`, `off`, `~`, `1.0`, `0x1F`, `1_000`, `12:30`, `2024-01-01`, `.inf`…); and line
    /// breaks or other control characters. In flow context (`inFlow`), `,[]{}` anywhere also quote.
    func scalar(_ string: String, inFlow: Bool = false) -> String {
        YAMLRenderer.needsQuotes(string, inFlow: inFlow) ? YAMLRenderer.doubleQuoted(string) : string
    }

    /// Whether `string` must be quoted to read back as the same string.
    static func needsQuotes(_ string: String, inFlow: Bool) -> Bool {
        guard let first = string.unicodeScalars.first, let last = string.unicodeScalars.last else { return true }
        if first == " " || last == " " || last == ":" { return true }
        if "-?:,[]{}#&*!|>'\"%@`".unicodeScalars.contains(first) { return true }
        if string.contains(": ") || string.contains(" #") || string.hasPrefix("...") { return true }
        if string.unicodeScalars.contains(where: isSpecial) { return true }
        if inFlow && string.unicodeScalars.contains(where: { ",[]{}".unicodeScalars.contains($0) }) { return true }
        return isReservedWord(string) || looksNumeric(string)
    }

    /// Control characters, line breaks and other characters that plain style cannot carry.
    private static func isSpecial(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value)
            || scalar == "\u{2028}" || scalar == "\u{2029}" || scalar == "\u{FEFF}"
    }

    /// Words YAML 1.1 or 1.2 resolves to null or bool, plus the 1.1 merge and value keys.
    private static func isReservedWord(_ string: String) -> Bool {
        let words: Set<String> = [
            "~", "null", "true", "false", "yes", "no", "y", "n", "on", "off", "<<", "=",
        ]
        let isCaseVariant =
            string == string.lowercased() || string == string.uppercased()
            || string == string.prefix(1).uppercased() + string.dropFirst().lowercased()
        return isCaseVariant && words.contains(string.lowercased())
    }

    /// Whether YAML 1.1 or 1.2 might resolve the string to a number or a timestamp.
    static func looksNumeric(_ string: String) -> Bool {
        var body = Substring(string)
        if body.first == "+" || body.first == "-" { body = body.dropFirst() }
        guard let first = body.first else { return false }
        if [".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"].contains(body) { return true }
        func all(_ text: Substring, in allowed: String) -> Bool {
            !text.isEmpty && text.allSatisfy { allowed.contains($0) }
        }
        let digits = "0123456789_"
        for (prefix, allowed) in [("0x", "0123456789abcdefABCDEF_"), ("0o", "01234567_"), ("0b", "01_")]
        where body.hasPrefix(prefix) {
            return all(body.dropFirst(2), in: allowed)
        }
        // Timestamps (YYYY-MM-DD…) and base-60 numbers (1:30, 190:20:30.15).
        if body.count >= 5, body.prefix(4).allSatisfy(\.isASCIIDigit), body.dropFirst(4).first == "-" {
            return true
        }
        if first.isASCIIDigit, body.contains(":") {
            let parts = body.split(separator: ":", omittingEmptySubsequences: false)
            return parts.dropLast().allSatisfy { all($0, in: digits) } && all(parts.last ?? "", in: digits + ".")
        }
        // Integers and floats: digits with at most one dot, then an optional exponent.
        let exponentStart = body.firstIndex { $0 == "e" || $0 == "E" }
        let mantissa = body[..<(exponentStart ?? body.endIndex)]
        guard all(mantissa, in: digits + "."), mantissa.contains(where: \.isASCIIDigit),
            mantissa.filter({ $0 == "." }).count <= 1
        else { return false }
        guard let exponentStart else { return true }
        var exponent = body[body.index(after: exponentStart)...]
        if exponent.first == "+" || exponent.first == "-" { exponent = exponent.dropFirst() }
        return all(exponent, in: "0123456789")
    }

    /// `string` as a double-quoted YAML scalar, escaping `\`, `"` and non-printable characters.
    static func doubleQuoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case "\0": result += "\\0"
            case "\u{85}": result += "\\N"
            case "\u{A0}": result += "\\_"
            case "\u{2028}": result += "\\L"
            case "\u{2029}": result += "\\P"
            case _ where isSpecial(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += scalar.value <= 0xFF ? "\\x" + pad(hex, to: 2) : "\\u" + pad(hex, to: 4)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    private static func pad(_ hex: String, to width: Int) -> String {
        String(repeating: "0", count: max(0, width - hex.count)) + hex
    }

    // MARK: Flow and block collections

    /// The value in flow style on one line: a scalar, `[a, b]` or `{a: 1, b: [x]}`.
    func flow(_ value: YAMLValue) -> String {
        switch value {
        case let .scalar(string):
            return scalar(string, inFlow: true)
        case let .sequence(items):
            guard !items.isEmpty else { return "[]" }
            let body = items.map(flow).joined(separator: ", ")
            return paddedBrackets ? "[ \(body) ]" : "[\(body)]"
        case let .mapping(pairs):
            guard !pairs.isEmpty else { return "{}" }
            let body = pairs.map { scalar($0.key, inFlow: true) + ": " + flow($0.value) }.joined(separator: ", ")
            return paddedBraces ? "{ \(body) }" : "{\(body)}"
        }
    }

    /// The text written after `key: ` (or `- `) when the value stays on that line, or `nil` when
    /// the value is written as an indented block. `column` is where the text would start.
    func inlineText(_ value: YAMLValue, column: Int) -> String? {
        switch value {
        case let .scalar(string):
            return scalar(string)
        case let .sequence(items) where items.allSatisfy({ $0.scalarString != nil }):
            let text = flow(value)
            return items.isEmpty || column + text.count <= maxWidth ? text : nil
        default:
            return value.isEmptyCollection ? flow(value) : nil
        }
    }

    /// The lines of a mapping or sequence in block style, each indented by at least `indent`.
    /// A scalar or an empty collection yields one line with its inline text.
    ///
    /// `blockAt` is the path (relative to `value`) of a collection to write in block style even
    /// where flow style would be used, such as a sequence of scalars.
    func blockLines(_ value: YAMLValue, indent: Int, blockAt: [YAMLPathComponent]? = nil) -> [String] {
        let margin = String(repeating: " ", count: indent)
        switch value {
        case let .mapping(pairs) where !pairs.isEmpty:
            return pairs.flatMap { pair in
                var childBlockAt: [YAMLPathComponent]?
                if let blockAt, blockAt.first == .key(pair.key) { childBlockAt = Array(blockAt.dropFirst()) }
                return entryLines(key: pair.key, value: pair.value, indent: indent, blockAt: childBlockAt)
            }
        case let .sequence(items) where !items.isEmpty:
            return items.flatMap { itemLines($0, dashIndent: indent) }
        default:
            return [margin + (inlineText(value, column: indent) ?? flow(value))]
        }
    }

    /// The lines of one `key: value` entry of a block mapping whose keys sit at column `indent`.
    /// With `blockAt == []`, a non-empty collection value is written in block style.
    func entryLines(key: String, value: YAMLValue, indent: Int, blockAt: [YAMLPathComponent]? = nil) -> [String] {
        let head = String(repeating: " ", count: indent) + scalar(key) + ":"
        let forcesBlock = blockAt == [] && !value.isEmptyCollection
        if !forcesBlock, let inline = inlineText(value, column: head.count + 1) {
            return [head + " " + inline]
        }
        return [head] + blockLines(value, indent: indent + indentStep, blockAt: forcesBlock ? nil : blockAt)
    }

    /// The lines of one block sequence item with its dash at column `dashIndent`.
    ///
    /// A collection item starts on the dash line and continues at `dashIndent + contentOffset`.
    /// With `preferFlow`, a collection item is written in flow style when it fits.
    func itemLines(_ value: YAMLValue, dashIndent: Int, contentOffset: Int = 2, preferFlow: Bool = false) -> [String] {
        let dash = String(repeating: " ", count: dashIndent) + "-" + String(repeating: " ", count: contentOffset - 1)
        if let inline = inlineText(value, column: dash.count) {
            return [dash + inline]
        }
        let flowText = flow(value)
        if preferFlow && dash.count + flowText.count <= maxWidth {
            return [dash + flowText]
        }
        var lines = blockLines(value, indent: dashIndent + contentOffset)
        lines[0] = dash + lines[0].drop(while: { $0 == " " })
        return lines
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
