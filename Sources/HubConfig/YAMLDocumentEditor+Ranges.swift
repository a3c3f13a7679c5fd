import Yams

/// A node of the parsed document together with the text it occupies.
///
/// `start` is where the node begins (from the Yams mark). `end` is just past its last character,
/// not counting a trailing comment, white space or the comment and blank lines that follow it:
/// those belong to the gap before the next node. Ends are computed for nodes in block context
/// and for flow collections; scalars inside flow collections only carry their value.
struct LocatedNode: Sendable {
    indirect enum Content: Sendable {
        /// A scalar. An implicit null (`key:` with nothing after it) has `start == end`.
        case scalar
        /// A flow collection (`[…]` or `{…}`), edited as a whole.
        case flow
        case blockMapping([LocatedEntry])
        case blockSequence([LocatedItem])
    }

    var value: YAMLValue
    var content: Content
    var start: Int
    var end: Int

    var isFlow: Bool {
        if case .flow = content { return true }
        return false
    }

    var isBlockCollection: Bool {
        switch content {
        case .blockMapping, .blockSequence: return true
        case .scalar, .flow: return false
        }
    }
}

/// A `key: value` entry of a block mapping.
struct LocatedEntry: Sendable {
    var key: String
    var keyStart: Int
    /// Just past the `:` that ends the key.
    var colonEnd: Int
    var value: LocatedNode
}

/// An item of a block sequence.
struct LocatedItem: Sendable {
    /// The offset of the item's `-`.
    var dash: Int
    var node: LocatedNode
}

/// Computes the text ranges of composed nodes in a document.
struct YAMLLocator {
    let source: YAMLSourceText

    /// Locates the document's root, which must be a mapping (`nil` for an empty document).
    func locateRoot(_ root: Node?) throws -> LocatedNode? {
        guard let root else { return nil }
        guard case .mapping = root else {
            let mark = root.mark
            throw YAMLEditError(
                "the document root must be a mapping of keys to values", line: mark?.line, column: mark?.column)
        }
        let located = locate(root, owner: -1)
        _ = try checkDocumentOrder(located, after: -1, reportingAt: located.start)
        return located
    }

    /// Refuses explicit (`? `) keys, and anchors and aliases in block context. Yams resolves an alias to the anchored
    /// node, whose position is the anchor's, so an edit could land in the wrong place; an alias
    /// shows up as a node that does not start after the node before it.
    /// - Returns: the last position checked.
    private func checkDocumentOrder(_ node: LocatedNode, after last: Int, reportingAt position: Int) throws -> Int {
        func error(_ message: String, at offset: Int) -> YAMLEditError {
            YAMLEditError(message, line: source.line(of: offset) + 1, column: source.column(of: offset) + 1)
        }
        guard node.start > last else {
            throw error("aliases (*name) are not supported by the editor", at: position)
        }
        if source[node.start] == "&" || source[skipProperties(from: node.start)] == "&" {
            throw error("anchors (&name) are not supported by the editor", at: node.start)
        }
        var last = node.start - 1
        switch node.content {
        case let .blockMapping(entries):
            for entry in entries {
                var before = entry.keyStart - 1
                while before >= 0, source[before] == " " { before -= 1 }
                if before >= 0, source[before] == "?" {
                    throw error("explicit keys (? key) are not supported by the editor", at: before)
                }
                guard entry.keyStart > last else {
                    throw error("aliases (*name) are not supported by the editor", at: entry.keyStart)
                }
                last = try checkDocumentOrder(entry.value, after: entry.keyStart, reportingAt: entry.keyStart)
            }
        case let .blockSequence(items):
            for item in items {
                last = try checkDocumentOrder(item.node, after: max(last, item.dash), reportingAt: item.dash)
            }
        case .scalar, .flow:
            last = node.start
        }
        return last
    }

    /// Locates a node in block context whose owning key or dash sits at column `owner`: the
    /// node's lines continue while they are indented more than `owner`.
    func locate(_ node: Node, owner: Int) -> LocatedNode {
        let start = node.mark.map { source.offset(line: $0.line, column: $0.column) } ?? 0
        let value = YAMLValue(node: node)
        let open = skipProperties(from: start)
        if source[open] == "{" || source[open] == "[", node.mapping != nil || node.sequence != nil {
            let end = source.flowEnd(open: open) ?? source.lineEnd(source.line(of: start))
            return LocatedNode(value: value, content: .flow, start: start, end: end)
        }
        switch node {
        case let .scalar(scalar):
            let isImplicitNull = scalar.string.isEmpty && scalar.style == .plain && source[start] != "!"
            let end = isImplicitNull ? start : scalarEnd(scalar.style, start: start, owner: owner)
            return LocatedNode(value: value, content: .scalar, start: start, end: end)
        case let .mapping(mapping):
            let entries = mapping.map { key, child in
                let keyStart = key.mark.map { source.offset(line: $0.line, column: $0.column) } ?? start
                let located = locate(child, owner: source.column(of: keyStart))
                return LocatedEntry(
                    key: YAMLValue.keyString(key), keyStart: keyStart,
                    colonEnd: colonEnd(key: key, keyStart: keyStart, valueStart: located.start), value: located)
            }
            return LocatedNode(
                value: value, content: .blockMapping(entries), start: start, end: entries.last?.value.end ?? start)
        case let .sequence(sequence):
            let dashColumn = source.column(of: start)
            var items: [LocatedItem] = []
            for child in sequence {
                let located = locate(child, owner: dashColumn)
                let previousEnd = items.last?.node.end ?? start
                let dash = findDash(column: dashColumn, before: located.start, notBefore: previousEnd)
                items.append(LocatedItem(dash: dash, node: located))
            }
            return LocatedNode(
                value: value, content: .blockSequence(items), start: start, end: items.last?.node.end ?? start)
        case .alias:
            return LocatedNode(value: value, content: .scalar, start: start, end: start)
        }
    }

    /// Skips a leading tag (`!!str `) so that the node's opening character can be inspected.
    private func skipProperties(from start: Int) -> Int {
        var offset = start
        while source[offset] == "!" {
            while let scalar = source[offset], !scalar.isYAMLWhitespace { offset += 1 }
            while let scalar = source[offset], scalar.isYAMLSpace { offset += 1 }
        }
        return offset
    }

    private func scalarEnd(_ style: Node.Scalar.Style, start: Int, owner: Int) -> Int {
        let startLine = source.line(of: start)
        switch style {
        case .singleQuoted, .doubleQuoted:
            if let open = source.firstOnLine("\"'", from: start), let end = source.quotedEnd(open: open) {
                return end
            }
            return source.plainContentEnd(line: startLine, from: start)
        case .literal, .folded:
            // The header line, then every line indented past the owner (blank lines inside are
            // content; trailing blank lines are left to the gap).
            var end = source.plainContentEnd(line: startLine, from: start)
            for line in (startLine + 1)..<source.lineCount where !source.isBlank(line) {
                guard source.indentation(line) > owner else { break }
                end = source.lineEnd(line)
            }
            return end
        default:
            // A plain scalar continues on more-indented lines until a comment line.
            var end = source.plainContentEnd(line: startLine, from: start)
            for line in (startLine + 1)..<source.lineCount where !source.isBlank(line) {
                guard source.indentation(line) > owner, !source.isComment(line),
                    let first = source.firstContent(line)
                else { break }
                end = source.plainContentEnd(line: line, from: first)
            }
            return end
        }
    }

    /// Just past the `:` ending an implicit key that starts at `keyStart`.
    private func colonEnd(key: Node, keyStart: Int, valueStart: Int) -> Int {
        var offset = keyStart
        if case let .scalar(scalar) = key, scalar.style == .singleQuoted || scalar.style == .doubleQuoted,
            let open = source.firstOnLine("\"'", from: keyStart), let end = source.quotedEnd(open: open)
        {
            offset = end
        }
        let lineEnd = source.lineEnd(source.line(of: keyStart))
        while offset < lineEnd {
            if source[offset] == ":" && (source[offset + 1]?.isYAMLWhitespace ?? true) { return offset + 1 }
            offset += 1
        }
        return min(valueStart, lineEnd)
    }

    /// The `-` at `column` introducing the item that starts at `itemStart`.
    private func findDash(column: Int, before itemStart: Int, notBefore: Int) -> Int {
        var line = source.line(of: itemStart)
        while line >= source.line(of: notBefore) {
            let offset = source.lineStart(line) + column
            if offset < itemStart, offset < source.lineEnd(line), source[offset] == "-" { return offset }
            line -= 1
        }
        return itemStart
    }
}

extension LocatedNode {
    /// The most common extra indentation of block collections nested under a key, or `nil`.
    func detectedIndentStep(in source: YAMLSourceText) -> Int? {
        var counts: [Int: Int] = [:]
        func visit(_ node: LocatedNode) {
            switch node.content {
            case let .blockMapping(entries):
                for entry in entries {
                    let value = entry.value
                    if value.isBlockCollection, source.line(of: value.start) > source.line(of: entry.keyStart) {
                        let step = source.column(of: value.start) - source.column(of: entry.keyStart)
                        if step > 0 { counts[step, default: 0] += 1 }
                    }
                    visit(value)
                }
            case let .blockSequence(items):
                items.forEach { visit($0.node) }
            case .scalar, .flow:
                break
            }
        }
        visit(self)
        return counts.max { ($0.value, -$0.key) < ($1.value, -$1.key) }?.key
    }

    /// Whether the document's flow collections pad their brackets (`{ a: 1 }`), for `{` and `[`,
    /// taken from the first flow collection using each.
    func detectedPadding(in source: YAMLSourceText) -> (braces: Bool?, brackets: Bool?) {
        var braces: Bool?
        var brackets: Bool?
        func visit(_ node: LocatedNode) {
            switch node.content {
            case .flow:
                let padding = source.padding(of: node.start..<node.end)
                braces = braces ?? padding.braces
                brackets = brackets ?? padding.brackets
            case let .blockMapping(entries):
                entries.forEach { visit($0.value) }
            case let .blockSequence(items):
                items.forEach { visit($0.node) }
            case .scalar:
                break
            }
        }
        visit(self)
        return (braces, brackets)
    }
}

extension YAMLSourceText {
    /// Whether the first `{` and the first `[` in `range` are followed by a space.
    func padding(of range: Range<Int>) -> (braces: Bool?, brackets: Bool?) {
        func isPadded(_ bracket: Unicode.Scalar) -> Bool? {
            range.first { scalars[$0] == bracket }.map { self[$0 + 1] == " " }
        }
        return (isPadded("{"), isPadded("["))
    }
}
