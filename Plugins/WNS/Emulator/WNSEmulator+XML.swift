/// A small XML well-formedness check for the WNS emulator: one root element, matched tags, quoted
/// attributes, only the five predefined entities or character references, and no `<` or bare `&` in
/// text. Enough to catch a title that was not escaped; not a validating parser.
enum WNSXMLCheck {
    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// The root element's name, or why the text is not well-formed XML.
    static func rootElement(of text: String) -> Result<String, Problem> {
        var scanner = Scanner(Array(text.unicodeScalars))
        do {
            return .success(try scanner.document())
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(description: "\(error)"))
        }
    }

    private struct Scanner {
        let scalars: [Unicode.Scalar]
        var index = 0

        init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

        var atEnd: Bool { index >= scalars.count }

        func peek(_ text: String) -> Bool {
            let wanted = Array(text.unicodeScalars)
            return index + wanted.count <= scalars.count && Array(scalars[index..<index + wanted.count]) == wanted
        }

        mutating func skipSpace() {
            while !atEnd, scalars[index].properties.isWhitespace { index += 1 }
        }

        mutating func skip(past terminator: String) throws {
            while !atEnd && !peek(terminator) { index += 1 }
            guard !atEnd else { throw Problem(description: "'\(terminator)' is missing") }
            index += terminator.unicodeScalars.count
        }

        mutating func document() throws -> String {
            skipSpace()
            if peek("<?xml") { try skip(past: "?>") }
            try skipMisc()
            guard peek("<") else { throw Problem(description: "the document has no root element") }
            let root = try element()
            try skipMisc()
            guard atEnd else { throw Problem(description: "content after the root element") }
            return root
        }

        mutating func skipMisc() throws {
            skipSpace()
            while peek("<!--") {
                try skip(past: "-->")
                skipSpace()
            }
        }

        mutating func name() throws -> String {
            var name = ""
            while !atEnd,
                scalars[index].properties.isAlphabetic || "0123456789-_.:".unicodeScalars.contains(scalars[index])
            {
                name.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard !name.isEmpty else { throw Problem(description: "a name is expected at offset \(index)") }
            return name
        }

        /// Parses `<name …>…</name>` or `<name …/>` at the current `<`.
        mutating func element() throws -> String {
            index += 1
            let tag = try name()
            while true {
                skipSpace()
                if peek("/>") {
                    index += 2
                    return tag
                }
                if peek(">") {
                    index += 1
                    break
                }
                _ = try name()
                skipSpace()
                guard peek("=") else { throw Problem(description: "attribute without '=' in <\(tag)>") }
                index += 1
                skipSpace()
                guard !atEnd, scalars[index] == "\"" || scalars[index] == "'" else {
                    throw Problem(description: "unquoted attribute value in <\(tag)>")
                }
                let quote = scalars[index]
                index += 1
                try characterData(until: quote)
                index += 1
            }
            while true {
                try characterData(until: "<")
                if peek("</") {
                    index += 2
                    let closing = try name()
                    skipSpace()
                    guard closing == tag, peek(">") else {
                        throw Problem(description: "</\(closing)> does not close <\(tag)>")
                    }
                    index += 1
                    return tag
                }
                if peek("<!--") {
                    try skip(past: "-->")
                } else if peek("<![CDATA[") {
                    try skip(past: "]]>")
                } else {
                    _ = try element()
                }
            }
        }

        /// Text up to `terminator` (not consumed): no `<` inside, every `&` a known reference.
        mutating func characterData(until terminator: Unicode.Scalar) throws {
            while !atEnd && scalars[index] != terminator {
                let scalar = scalars[index]
                if scalar == "<" { throw Problem(description: "a bare '<' in text or an attribute") }
                if scalar == "&" { try reference() } else { index += 1 }
            }
            guard !atEnd else { throw Problem(description: "the document ends inside an element") }
        }

        mutating func reference() throws {
            let start = index
            while !atEnd && scalars[index] != ";" && index - start < 12 { index += 1 }
            guard !atEnd, scalars[index] == ";" else { throw Problem(description: "a bare '&' (escape it as &amp;)") }
            let entity = String(String.UnicodeScalarView(scalars[(start + 1)..<index]))
            index += 1
            if ["amp", "lt", "gt", "quot", "apos"].contains(entity) { return }
            if entity.hasPrefix("#x"), UInt32(entity.dropFirst(2), radix: 16) != nil { return }
            if entity.hasPrefix("#"), UInt32(entity.dropFirst()) != nil { return }
            throw Problem(description: "unknown entity &\(entity);")
        }
    }
}
