import Yams

/// An error from ``YAMLDocumentEditor``: invalid YAML, an unsupported document, or a path that
/// does not fit the document. `line` and `column` are 1-based when the error has a position.
public struct YAMLEditError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, without the position.
    public var message: String
    /// The 1-based line the error concerns, if known.
    public var line: Int?
    /// The 1-based column (in Unicode scalars) the error concerns, if known.
    public var column: Int?

    public init(_ message: String, line: Int? = nil, column: Int? = nil) {
        self.message = message
        self.line = line
        self.column = column
    }

    /// `line:column: message`, or just the message when there is no position.
    public var description: String {
        guard let line else { return message }
        return "\(line):\(column ?? 1): \(message)"
    }
}

/// Edits a YAML document (such as `hub.yaml`) at the text level, so that everything an edit does
/// not touch stays byte-for-byte as it was: comments, blank lines, key order, quoting and
/// indentation. Yams is only used to find where nodes are.
///
/// Contract:
/// - The root of the document must be a mapping; an empty document (or one holding only
///   comments) is an empty mapping.
/// - Each mutation either succeeds, leaving ``text`` parsing to exactly the document with that
///   one change applied, or throws and leaves the editor unchanged.
/// - A mutation that does not change the document's value does not change ``text`` at all, so
///   repeating an edit is a no-op.
/// - New content uses the file's own indentation step (2 spaces when it has none) and bracket
///   padding; new values are rendered as described on `YAMLRenderer`.
///
/// Limitations: lines must end in `\n` (CRLF is refused); anchors, aliases and explicit (`? `)
/// keys are refused; comments inside a replaced flow collection, or inside a replaced or
/// removed value, go with it; scalars are untyped, so a new `.scalar("true")` or
/// `.scalar("3")` is written quoted (an existing unquoted `true` compares equal and is kept).
public struct YAMLDocumentEditor: Sendable {
    /// The current text of the document.
    public private(set) var text: String
    var source: YAMLSourceText
    /// The located root mapping, or `nil` for an empty document.
    var root: LocatedNode?
    /// Renders new values in the style detected from the document.
    var renderer = YAMLRenderer()

    /// Parses `text`.
    ///
    /// - Throws: ``YAMLEditError`` (with line and column) when the text is not valid YAML, holds
    ///   more than one document, uses anchors, aliases or explicit (`? `) keys in block context,
    ///   contains a carriage return (CRLF line
    ///   breaks are not supported), or its root is not a mapping.
    public init(text: String) throws {
        if let carriageReturn = text.unicodeScalars.firstIndex(of: "\r") {
            let line = text.unicodeScalars[..<carriageReturn].count { $0 == "\n" } + 1
            throw YAMLEditError("CR or CRLF line breaks are not supported; use LF (\\n) only", line: line)
        }
        self.text = text
        source = YAMLSourceText(text)
        try reparse()
    }

    /// The whole document as a value; an empty document is an empty mapping.
    public var rootValue: YAMLValue { root?.value ?? .mapping([]) }

    /// The value at `path`, or `nil` when the path does not exist (an empty path is the root).
    public func value(at path: [YAMLPathComponent]) -> YAMLValue? {
        rootValue.value(at: path)
    }

    /// Sets the value at `path`, editing as little text as possible:
    /// - if the current value is equal to `value`, nothing changes;
    /// - block mappings are updated key by key: keys with equal values are untouched (with
    ///   their comments), changed keys are updated recursively, new keys are appended after the
    ///   mapping's last key, and keys missing from `value` are removed with their lines;
    /// - block sequences of the same length are updated item by item; a sequence that only
    ///   gains items at its end gets them appended, and one that only loses items has them
    ///   removed; any other change replaces the whole sequence;
    /// - other values are replaced in place, keeping a trailing `# comment` on the line; a
    ///   flow-style value is replaced in flow style when the line fits in 100 columns, else in
    ///   block style;
    /// - missing keys (and missing parent mappings) are created at the end of their parent
    ///   mapping; a null value on the way becomes a mapping; index `count` appends an item.
    ///
    /// - Throws: ``YAMLEditError`` if the path goes through a scalar that is not null, uses a
    ///   key on a sequence or an index on a mapping, or indexes past the end of a sequence; if
    ///   `path` is empty and `value` is not a mapping; or if `value` repeats a key in a mapping.
    public mutating func set(_ value: YAMLValue, at path: [YAMLPathComponent]) throws {
        if path.isEmpty, case .scalar = value {
            throw YAMLEditError("the document root must be a mapping, not a scalar")
        }
        if path.isEmpty, case .sequence = value {
            throw YAMLEditError("the document root must be a mapping, not a sequence")
        }
        try YAMLDocumentEditor.checkKeys(of: value)
        guard let expected = try? rootValue.setting(value, at: path) else {
            throw YAMLEditError("cannot set \(YAMLValue.describe(path)): it does not match the document structure")
        }
        try transaction(expecting: expected) { try $0.update(path, to: value, forceBlock: false) }
    }

    /// Removes the mapping key or sequence item at `path`, with the lines it occupies and the
    /// comment at the end of its last line. Comment lines above it and after it stay. Removing
    /// the last key or item of a nested collection leaves `{}` or `[]`.
    ///
    /// - Throws: ``YAMLEditError`` when nothing exists at `path` or `path` is empty.
    public mutating func remove(at path: [YAMLPathComponent]) throws {
        guard let expected = try? rootValue.removing(at: path) else {
            throw YAMLEditError("nothing to remove at \(YAMLValue.describe(path))")
        }
        try transaction(expecting: expected) { try $0.removeNode(at: path) }
    }

    /// Appends `value` to the sequence at `path`.
    ///
    /// In a block sequence the new item goes after the last item, with the same indentation and
    /// item style (a flow-style item stays flow-style when it fits; a blank line between the
    /// last two items is repeated). A flow sequence is rewritten with the new item. A missing
    /// key (or a null value) becomes a block sequence holding `value`.
    ///
    /// - Throws: ``YAMLEditError`` when the value at `path` exists and is not a sequence or null,
    ///   or `value` repeats a key in a mapping.
    public mutating func append(_ value: YAMLValue, toSequenceAt path: [YAMLPathComponent]) throws {
        let items: [YAMLValue]
        switch rootValue.value(at: path) {
        case let .sequence(existing)?:
            items = existing
        case nil:
            items = []
        case let current? where current.isNullScalar:
            items = []
        default:
            throw YAMLEditError("cannot append to \(YAMLValue.describe(path)): it is not a sequence")
        }
        try YAMLDocumentEditor.checkKeys(of: value)
        let expected = try rootValue.setting(.sequence(items + [value]), at: path)
        try transaction(expecting: expected) { try $0.appendItem(value, to: path) }
    }

    /// Refuses a new value whose mappings repeat a key, which YAML does not allow.
    private static func checkKeys(of value: YAMLValue) throws {
        if let key = value.firstDuplicateKey {
            throw YAMLEditError("the new value has the key '\(key)' twice in one mapping")
        }
    }

    /// Runs `edit` on a copy and keeps the result only if it parses to `expected`.
    private mutating func transaction(
        expecting expected: YAMLValue, _ edit: (inout YAMLDocumentEditor) throws -> Void
    ) throws {
        var copy = self
        try edit(&copy)
        guard copy.rootValue.isEquivalent(to: expected) else {
            throw YAMLEditError("internal error: the edit would not produce the intended document; nothing was changed")
        }
        self = copy
    }

    // MARK: Parsing

    /// Makes `edited` the document's text and re-parses it.
    mutating func adopt(_ edited: YAMLSourceText) throws {
        text = edited.string
        try reparse()
    }

    /// Re-parses ``text`` and refreshes node positions and the detected style.
    mutating func reparse() throws {
        source = YAMLSourceText(text)
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw YAMLEditError(parsing: error)
        }
        if let node, case let .scalar(scalar) = node, scalar.string.isEmpty, scalar.style == .plain {
            root = nil  // `---` alone, or an explicit empty document
        } else {
            root = try YAMLLocator(source: source).locateRoot(node)
        }
        renderer = YAMLRenderer()
        if let root {
            renderer.indentStep = root.detectedIndentStep(in: source) ?? 2
            let padding = root.detectedPadding(in: source)
            renderer.paddedBraces = padding.braces ?? false
            renderer.paddedBrackets = padding.brackets ?? false
        }
    }
}

extension YAMLEditError {
    /// Converts a Yams parse error, keeping its position.
    init(parsing error: YamlError) {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
            let .composer(context, problem, mark, _):
            let detail = context.map { " (\($0.text) at \($0.mark.line):\($0.mark.column))" } ?? ""
            self.init("invalid YAML: \(problem)\(detail)", line: mark.line, column: mark.column)
        case let .duplicatedKeysInMapping(duplicates, context):
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            self.init("invalid YAML: duplicate key \(keys)", line: context.mark.line, column: context.mark.column)
        default:
            self.init("invalid YAML: \(error)")
        }
    }
}
