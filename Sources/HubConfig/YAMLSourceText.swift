/// The text of a YAML document as an array of Unicode scalars, indexed by line.
///
/// Offsets are scalar indices into ``scalars``; columns are zero-based scalar counts from the
/// start of a line, which matches how libyaml (and so `Yams.Mark`) counts columns. Lines are
/// separated by `\n` only (CRLF input is not supported). A text ending in `\n` has a last, empty
/// line after it.
struct YAMLSourceText: Sendable {
    private(set) var scalars: [Unicode.Scalar]
    /// The offset at which each line starts.
    private(set) var lineStarts: [Int] = [0]

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
        indexLines()
    }

    private mutating func indexLines() {
        lineStarts = [0]
        for (offset, scalar) in scalars.enumerated() where scalar == "\n" {
            lineStarts.append(offset + 1)
        }
    }

    /// The text as a `String`.
    var string: String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    var count: Int { scalars.count }
    var lineCount: Int { lineStarts.count }

    subscript(offset: Int) -> Unicode.Scalar? {
        scalars.indices.contains(offset) ? scalars[offset] : nil
    }

    /// The text of `range`.
    func text(_ range: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[range])
        return String(view)
    }

    /// Replaces the scalars in `range` with `replacement`.
    mutating func replace(_ range: Range<Int>, with replacement: String) {
        scalars.replaceSubrange(range, with: replacement.unicodeScalars)
        indexLines()
    }

    // MARK: Lines and columns

    /// The offset of a 1-based line and column, as found in a `Yams.Mark`.
    func offset(line: Int, column: Int) -> Int {
        let lineIndex = min(max(line - 1, 0), lineCount - 1)
        return min(lineStarts[lineIndex] + max(column - 1, 0), lineEnd(lineIndex))
    }

    /// The zero-based line containing `offset`.
    func line(of offset: Int) -> Int {
        var low = 0
        var high = lineCount - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// The zero-based column of `offset` within its line.
    func column(of offset: Int) -> Int { offset - lineStarts[line(of: offset)] }

    func lineStart(_ line: Int) -> Int { lineStarts[line] }

    /// The offset of the line's terminating `\n`, or the end of the text for the last line.
    func lineEnd(_ line: Int) -> Int { line + 1 < lineCount ? lineStarts[line + 1] - 1 : count }

    /// The offset of the first non-space character on the line, or `nil` for a blank line.
    func firstContent(_ line: Int) -> Int? {
        (lineStart(line)..<lineEnd(line)).first { !scalars[$0].isYAMLSpace }
    }

    /// The number of leading spaces of the line.
    func indentation(_ line: Int) -> Int { (firstContent(line) ?? lineEnd(line)) - lineStart(line) }

    func isBlank(_ line: Int) -> Bool { firstContent(line) == nil }

    /// Whether the line holds only a comment.
    func isComment(_ line: Int) -> Bool { firstContent(line).map { scalars[$0] == "#" } ?? false }

    /// Whether only spaces precede `offset` on its line.
    func startsLine(_ offset: Int) -> Bool {
        (lineStart(line(of: offset))..<offset).allSatisfy { scalars[$0].isYAMLSpace }
    }

    // MARK: Scanning

    /// Where plain text starting at `start` ends on its line: before a ` #` comment, with trailing
    /// white space trimmed. Not quote-aware; use for plain scalars and block scalar headers.
    func plainContentEnd(line: Int, from start: Int) -> Int {
        var end = lineEnd(line)
        for offset in start..<end where scalars[offset] == "#" {
            if offset == lineStart(line) || scalars[offset - 1].isYAMLSpace {
                end = offset
                break
            }
        }
        while end > start && scalars[end - 1].isYAMLSpace { end -= 1 }
        return end
    }

    /// The first offset at or after `start` holding one of `targets` on the same line (skipping a
    /// tag or anchor before a node's opening character).
    func firstOnLine(_ targets: String, from start: Int) -> Int? {
        (start..<lineEnd(line(of: start))).first { targets.unicodeScalars.contains(scalars[$0]) }
    }

    /// The offset just past the closing quote of the quoted scalar opening at `open`.
    func quotedEnd(open: Int) -> Int? {
        let quote = scalars[open]
        var offset = open + 1
        while offset < count {
            let scalar = scalars[offset]
            if quote == "\"" && scalar == "\\" {
                offset += 2
                continue
            }
            if scalar == quote {
                if quote == "'" && self[offset + 1] == "'" {
                    offset += 2
                    continue
                }
                return offset + 1
            }
            offset += 1
        }
        return nil
    }

    /// The offset just past the bracket closing the flow collection opening at `open`, skipping
    /// quoted scalars and comments.
    func flowEnd(open: Int) -> Int? {
        var depth = 0
        var offset = open
        while offset < count {
            let scalar = scalars[offset]
            let previous = offset > 0 ? scalars[offset - 1] : "\n"
            let opensScalar = previous.isYAMLWhitespace || "[{,:".unicodeScalars.contains(previous)
            switch scalar {
            case "\"" where opensScalar, "'" where opensScalar:
                guard let end = quotedEnd(open: offset) else { return nil }
                offset = end
                continue
            case "#" where previous.isYAMLWhitespace:
                offset = lineEnd(line(of: offset))
                continue
            case "[", "{":
                depth += 1
            case "]", "}":
                depth -= 1
                if depth == 0 { return offset + 1 }
            default:
                break
            }
            offset += 1
        }
        return nil
    }
}

extension Unicode.Scalar {
    /// A space or tab.
    var isYAMLSpace: Bool { self == " " || self == "\t" }
    /// A space, tab or line break.
    var isYAMLWhitespace: Bool { isYAMLSpace || self == "\n" || self == "\r" }
}
