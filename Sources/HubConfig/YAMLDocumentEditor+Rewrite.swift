/// Replacing, appending and removing nodes in the text.
extension YAMLDocumentEditor {
    /// Replaces the text of the node at `path` with a rendering of `value`.
    ///
    /// Scalars and empty collections go on the key (or dash) line, keeping a trailing comment.
    /// A flow collection stays in flow style when the line fits; a block collection stays in
    /// block style at its old indentation, keeping the comments above its first line. Otherwise
    /// a block rendering starts on the line after the key. `blockAt` names a collection (relative
    /// to `path`) that must be written in block style.
    mutating func replaceValue(
        at path: [YAMLPathComponent], with value: YAMLValue, blockAt: [YAMLPathComponent]? = nil
    ) throws {
        guard let (node, slot) = locate(path) else {
            throw YAMLEditError("nothing to replace at \(YAMLValue.describe(path))")
        }
        let renderer = renderer(matching: node)
        let isCollection = value.scalarString == nil && !value.isEmptyCollection
        let forcedBlock = blockAt == [] && isCollection
        let endLine = source.line(of: node.end)
        let trailingWidth = source.lineEnd(endLine) - node.end

        guard let indicatorEnd = slot.indicatorEnd else {
            guard case .mapping = value else { throw YAMLEditError("the document root must be a mapping") }
            let flow = renderer.flow(value)
            let fits = source.column(of: node.start) + flow.count + trailingWidth <= renderer.maxWidth
            let useFlow = !isCollection || (node.isFlow && fits && !forcedBlock)
            let block = renderer.blockLines(value, indent: 0, blockAt: blockAt).joined(separator: "\n")
            try apply([(node.start..<node.end, useFlow ? flow : block)])
            return
        }

        let startLine = source.line(of: node.start)
        let startsOnIndicatorLine = startLine == source.line(of: indicatorEnd)
        let needsSpace = node.start == indicatorEnd
        let inlineColumn =
            startsOnIndicatorLine
            ? source.column(of: node.start) + (needsSpace ? 1 : 0) : source.column(of: indicatorEnd) + 1
        var inline: String?
        if !forcedBlock {
            if node.isFlow && isCollection {
                let flow = renderer.flow(value)
                if inlineColumn + flow.count + trailingWidth <= renderer.maxWidth { inline = flow }
            } else if !(node.isBlockCollection && isCollection) {
                inline = renderer.inlineText(value, column: inlineColumn)
            }
        }

        if let inline {
            if startsOnIndicatorLine {
                try apply([(node.start..<node.end, (needsSpace ? " " : "") + inline)])
            } else {
                try apply([(lineRange(startLine...endLine), ""), (indicatorEnd..<indicatorEnd, " " + inline)])
            }
        } else if node.isBlockCollection && source.startsLine(node.start) {
            // Keep the old block's indentation when it is valid for the new value (a sequence
            // under a key may sit at the key's own column; a mapping may not).
            var indent = source.column(of: node.start)
            var isMapping = false
            if case .mapping = value { isMapping = true }
            if indent < slot.owner || (indent == slot.owner && (isMapping || slot.isSequenceItem)) {
                indent = slot.owner + renderer.indentStep
            }
            let lines = renderer.blockLines(value, indent: indent, blockAt: blockAt)
            try apply([(source.lineStart(startLine)..<node.end, lines.joined(separator: "\n"))])
        } else if slot.isSequenceItem && startsOnIndicatorLine {
            // A collection item starts on its dash line: `- key: value`.
            let indent = needsSpace ? slot.owner + 2 : source.column(of: node.start)
            var lines = renderer.blockLines(value, indent: indent, blockAt: blockAt)
            lines[0] = (needsSpace ? " " : "") + String(lines[0].drop(while: { $0 == " " }))
            try apply([(node.start..<node.end, lines.joined(separator: "\n"))])
        } else {
            // Drop the old value from the key line (keeping its trailing comment) and put the
            // block on the following lines.
            let lines = renderer.blockLines(value, indent: slot.owner + renderer.indentStep, blockAt: blockAt)
            let lineEnd = source.lineEnd(endLine)
            try apply([(indicatorEnd..<node.end, ""), (lineEnd..<lineEnd, "\n" + lines.joined(separator: "\n"))])
        }
    }

    /// The document's renderer, with the bracket padding of `node` when it is a flow collection.
    private func renderer(matching node: LocatedNode) -> YAMLRenderer {
        var renderer = self.renderer
        if node.isFlow {
            let padding = source.padding(of: node.start..<node.end)
            renderer.paddedBraces = padding.braces ?? renderer.paddedBraces
            renderer.paddedBrackets = padding.brackets ?? renderer.paddedBrackets
        }
        return renderer
    }

    // MARK: Append

    /// Appends `value` to the sequence at `path` (see ``append(_:toSequenceAt:)``).
    mutating func appendItem(_ value: YAMLValue, to path: [YAMLPathComponent]) throws {
        guard let found = deepestNode(along: path), found.depth == path.count else {
            if let found = deepestNode(along: path), found.node.isFlow {
                let rest = path[found.depth...]
                var items: [YAMLValue] = []
                if case let .sequence(existing)? = found.node.value.value(at: rest) { items = existing }
                let newValue = try found.node.value.setting(.sequence(items + [value]), at: rest)
                try replaceValue(at: Array(path[..<found.depth]), with: newValue)
            } else {
                try update(path, to: .sequence([value]), forceBlock: true)
            }
            return
        }
        let node = found.node
        switch (node.content, node.value) {
        case let (.blockSequence(items), _):
            let last = items[items.count - 1]
            let dashColumn = source.column(of: last.dash)
            let contentOnDashLine =
                source.line(of: last.node.start) == source.line(of: last.dash) && last.node.start > last.dash + 1
            let contentOffset = contentOnDashLine ? source.column(of: last.node.start) - dashColumn : 2
            let lines = renderer(matching: last.node).itemLines(
                value, dashIndent: dashColumn, contentOffset: contentOffset, preferFlow: last.node.isFlow)
            // Items separated by blank lines (or one item with blank lines inside) get one.
            var separator = "\n"
            if items.count >= 2
                ? hasBlankLine(between: items[items.count - 2].node.end, and: last.dash)
                : hasBlankLine(between: last.dash, and: last.node.end)
            {
                separator += "\n"
            }
            let insertion = source.lineEnd(source.line(of: last.node.end))
            try apply([(insertion..<insertion, separator + lines.joined(separator: "\n"))])
        case let (.flow, .sequence(items)):
            try replaceValue(at: path, with: .sequence(items + [value]))
        case (.scalar, _) where node.value.isNullScalar:
            try replaceValue(at: path, with: .sequence([value]), blockAt: [])
        default:
            throw YAMLEditError("cannot append to \(YAMLValue.describe(path)): it is not a sequence")
        }
    }

    /// Whether a blank line lies strictly between the lines of two offsets.
    func hasBlankLine(between first: Int, and second: Int) -> Bool {
        let (from, to) = (source.line(of: first) + 1, source.line(of: second))
        return from < to && (from..<to).contains { source.isBlank($0) }
    }

    // MARK: Remove

    /// Removes the mapping entry or sequence item at `path` (see ``remove(at:)``).
    mutating func removeNode(at path: [YAMLPathComponent]) throws {
        let notFound = YAMLEditError("nothing to remove at \(YAMLValue.describe(path))")
        guard let component = path.last, let found = deepestNode(along: path.dropLast()) else { throw notFound }
        let parentPath = Array(path[..<found.depth])
        let parent = found.node
        if found.depth < path.count - 1 || parent.isFlow {
            guard parent.isFlow else { throw notFound }
            try replaceValue(at: parentPath, with: parent.value.removing(at: path[found.depth...]))
            return
        }
        switch (component, parent.content) {
        case let (.key(key), .blockMapping(entries)):
            guard let index = entries.firstIndex(where: { $0.key == key }) else { throw notFound }
            let entry = entries[index]
            if entries.count == 1 && !parentPath.isEmpty {
                try replaceValue(at: parentPath, with: .mapping([]))
            } else if source.startsLine(entry.keyStart) {
                let lines = source.line(of: entry.keyStart)...source.line(of: entry.value.end)
                try apply([(lineRange(lines), "")])
            } else if index + 1 < entries.count {
                // The first key of a `- key: value` item: the next key moves up to the dash line.
                try apply([(entry.keyStart..<entries[index + 1].keyStart, "")])
            } else {
                try replaceValue(at: parentPath, with: parent.value.removing(at: [component]))
            }
        case let (.index(index), .blockSequence(items)) where items.indices.contains(index):
            let item = items[index]
            if items.count == 1 {
                try replaceValue(at: parentPath, with: .sequence([]))
            } else if source.startsLine(item.dash) {
                try apply([(lineRange(source.line(of: item.dash)...source.line(of: item.node.end)), "")])
            } else {
                try replaceValue(at: parentPath, with: parent.value.removing(at: [component]))
            }
        default:
            throw notFound
        }
    }
}
