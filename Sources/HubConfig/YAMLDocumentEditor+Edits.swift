/// The text-level operations behind ``YAMLDocumentEditor``'s mutations. Each one edits the text
/// and re-parses it, so the next operation works on fresh positions.
extension YAMLDocumentEditor {
    /// Where a located node sits in its parent.
    struct Slot {
        /// Just past the `:` or `-` that introduces the node; `nil` for the root.
        var indicatorEnd: Int?
        /// The column of the key or dash owning the node (-1 for the root).
        var owner: Int
        var isSequenceItem: Bool
    }

    /// The deepest node reachable along `path` through block collections, with the number of
    /// path components it took to reach it; `nil` for an empty document.
    func deepestNode(along path: some Collection<YAMLPathComponent>) -> (depth: Int, node: LocatedNode, slot: Slot)? {
        guard var node = root else { return nil }
        var slot = Slot(indicatorEnd: nil, owner: -1, isSequenceItem: false)
        var depth = 0
        for component in path {
            switch (component, node.content) {
            case let (.key(key), .blockMapping(entries)):
                guard let entry = entries.first(where: { $0.key == key }) else { return (depth, node, slot) }
                slot = Slot(
                    indicatorEnd: entry.colonEnd, owner: source.column(of: entry.keyStart), isSequenceItem: false)
                node = entry.value
            case let (.index(index), .blockSequence(items)) where items.indices.contains(index):
                let dash = items[index].dash
                slot = Slot(indicatorEnd: dash + 1, owner: source.column(of: dash), isSequenceItem: true)
                node = items[index].node
            default:
                return (depth, node, slot)
            }
            depth += 1
        }
        return (depth, node, slot)
    }

    /// The node at `path`, if it is reachable through block collections.
    func locate(_ path: [YAMLPathComponent]) -> (node: LocatedNode, slot: Slot)? {
        guard let found = deepestNode(along: path), found.depth == path.count else { return nil }
        return (found.node, found.slot)
    }

    /// Replaces the given ranges (which must not overlap) and re-parses.
    mutating func apply(_ edits: [(range: Range<Int>, text: String)]) throws {
        let ordered = edits.sorted {
            ($0.range.lowerBound, $0.range.upperBound) > ($1.range.lowerBound, $1.range.upperBound)
        }
        var edited = source
        for edit in ordered { edited.replace(edit.range, with: edit.text) }
        try adopt(edited)
    }

    /// The range covering whole lines `lines`, with one adjacent line break.
    func lineRange(_ lines: ClosedRange<Int>) -> Range<Int> {
        if lines.upperBound + 1 < source.lineCount {
            return source.lineStart(lines.lowerBound)..<source.lineStart(lines.upperBound + 1)
        }
        // The last line of a text without a final newline: take the line break before it.
        return max(source.lineStart(lines.lowerBound) - 1, 0)..<source.count
    }

    // MARK: Set

    /// Sets `value` at `path` (see ``set(_:at:)``). With `forceBlock`, a collection created at a
    /// missing `path` is written in block style.
    mutating func update(_ path: [YAMLPathComponent], to value: YAMLValue, forceBlock: Bool) throws {
        guard rootValue.value(at: path) != value else { return }
        guard let found = deepestNode(along: path) else {
            // Empty document: add the first key(s).
            if path.isEmpty, case let .mapping(pairs) = value {
                for pair in pairs { try update([.key(pair.key)], to: pair.value, forceBlock: false) }
                return
            }
            guard case let .key(key)? = path.first else { throw mismatch(path) }
            let newValue = try YAMLValue.mapping([]).setting(value, at: path.dropFirst())
            let lines = renderer.entryLines(
                key: key, value: newValue, indent: 0, blockAt: forceBlock ? Array(path.dropFirst()) : nil)
            let separator = text.isEmpty || text.hasSuffix("\n") ? "" : "\n"
            let terminator = text.isEmpty || text.hasSuffix("\n") ? "\n" : ""
            try apply([(source.count..<source.count, separator + lines.joined(separator: "\n") + terminator)])
            return
        }
        let (depth, node, _) = found
        if depth == path.count {
            try updateExisting(path, node: node, to: value)
            return
        }
        let parentPath = Array(path[..<depth])
        let rest = path[depth...]
        switch (rest.first, node.content) {
        case (_, .flow):
            try replaceValue(at: parentPath, with: node.value.setting(value, at: rest))
        case let (.key(key)?, .blockMapping):
            let newValue = try YAMLValue.mapping([]).setting(value, at: rest.dropFirst())
            try insertEntry(
                key: key, value: newValue, into: parentPath, blockAt: forceBlock ? Array(rest.dropFirst()) : nil)
        case let (.index(index)?, .blockSequence(items)) where index == items.count:
            try appendItem(YAMLValue.mapping([]).setting(value, at: rest.dropFirst()), to: parentPath)
        case (.key?, .scalar) where node.value.isNullScalar:
            let blockAt = forceBlock ? Array(rest) : nil
            try replaceValue(at: parentPath, with: node.value.setting(value, at: rest), blockAt: blockAt)
        default:
            throw mismatch(path)
        }
    }

    private func mismatch(_ path: some Collection<YAMLPathComponent>) -> YAMLEditError {
        YAMLEditError("cannot set \(YAMLValue.describe(path)): it does not match the document structure")
    }

    /// Updates the existing node at `path` so that it reads as `value`.
    private mutating func updateExisting(_ path: [YAMLPathComponent], node: LocatedNode, to value: YAMLValue) throws {
        guard node.value != value else { return }
        switch (node.content, value) {
        case let (.blockMapping(entries), .mapping(pairs)) where !pairs.isEmpty:
            let oldKeys = entries.map(\.key)
            let newKeys = Set(pairs.map(\.key))
            for pair in pairs where oldKeys.contains(pair.key) {
                try update(path + [.key(pair.key)], to: pair.value, forceBlock: false)
            }
            for pair in pairs where !oldKeys.contains(pair.key) {
                try insertEntry(key: pair.key, value: pair.value, into: path, blockAt: nil)
            }
            for key in oldKeys where !newKeys.contains(key) {
                try removeNode(at: path + [.key(key)])
            }
        case let (.blockSequence(items), .sequence(newItems)) where !newItems.isEmpty:
            let oldItems = items.map(\.node.value)
            if oldItems.count == newItems.count {
                for (index, item) in newItems.enumerated() {
                    try update(path + [.index(index)], to: item, forceBlock: false)
                }
            } else if newItems.count > oldItems.count, Array(newItems.prefix(oldItems.count)) == oldItems {
                for item in newItems.dropFirst(oldItems.count) { try appendItem(item, to: path) }
            } else if let removed = YAMLDocumentEditor.removedIndices(from: oldItems, leaving: newItems) {
                for index in removed.reversed() { try removeNode(at: path + [.index(index)]) }
            } else {
                try replaceValue(at: path, with: value)
            }
        default:
            try replaceValue(at: path, with: value)
        }
    }

    /// The indices to remove from `old` to obtain `new`, if `new` is a subsequence of `old`.
    static func removedIndices(from old: [YAMLValue], leaving new: [YAMLValue]) -> [Int]? {
        var removed: [Int] = []
        var next = new.startIndex
        for (index, item) in old.enumerated() {
            if next < new.endIndex && new[next] == item {
                next += 1
            } else {
                removed.append(index)
            }
        }
        return next == new.endIndex ? removed : nil
    }

    /// Adds `key: value` after the last entry of the mapping at `parentPath`.
    mutating func insertEntry(
        key: String, value: YAMLValue, into parentPath: [YAMLPathComponent],
        blockAt: [YAMLPathComponent]?
    ) throws {
        guard let (parent, _) = locate(parentPath) else { throw mismatch(parentPath + [.key(key)]) }
        switch parent.content {
        case let .blockMapping(entries):
            let indent = source.column(of: entries[0].keyStart)
            let lines = renderer.entryLines(key: key, value: value, indent: indent, blockAt: blockAt)
            let last = entries[entries.count - 1]
            // Entries separated by blank lines get one before the new entry too.
            let blank =
                entries.count >= 2 && hasBlankLine(between: entries[entries.count - 2].value.end, and: last.keyStart)
            let insertion = source.lineEnd(source.line(of: last.value.end))
            try apply([(insertion..<insertion, (blank ? "\n\n" : "\n") + lines.joined(separator: "\n"))])
        case .scalar where !parent.value.isNullScalar, .blockSequence:
            throw mismatch(parentPath + [.key(key)])
        case .flow, .scalar:
            let newValue = try parent.value.setting(value, at: [.key(key)])
            try replaceValue(at: parentPath, with: newValue, blockAt: blockAt.map { [.key(key)] + $0 })
        }
    }
}
