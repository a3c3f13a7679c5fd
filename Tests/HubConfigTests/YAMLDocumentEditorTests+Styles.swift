import Testing

@testable import HubConfig

extension YAMLDocumentEditorTests {
    // MARK: Flow collections

    @Test("A flow mapping stays flow, on one line, when it fits")
    func flowMappingStaysFlow() throws {
        let text = "platforms:\n  ios: { appIds: [a, b] }   # iOS\n  android: { appIds: [c] }\n"
        let ids = Self.list("a", "b", "com.contoso.notes.widget")
        let result = try edit(
            text,
            expecting: .mapping([
                (
                    "platforms",
                    .mapping([
                        ("ios", .mapping([("appIds", ids)])), ("android", .mapping([("appIds", Self.list("c"))])),
                    ])
                )
            ])
        ) { try $0.set(.mapping([("appIds", ids)]), at: [.key("platforms"), .key("ios")]) }
        #expect(
            result
                == "platforms:\n  ios: { appIds: [a, b, com.contoso.notes.widget] }   # iOS\n  android: { appIds: [c] }\n"
        )
    }

    @Test("A flow value too long for 100 columns becomes a block")
    func longFlowBecomesBlock() throws {
        let text = "ios: { appIds: [a] }   # iOS\nnext: 1\n"
        let ids = (1...6).map { YAMLValue.scalar("com.contoso.notes.extension\($0)") }
        let value = YAMLValue.mapping([("appIds", .sequence(ids))])
        let result = try edit(text, expecting: .mapping([("ios", value), ("next", .scalar("1"))])) {
            try $0.set(value, at: [.key("ios")])
        }
        let items = ids.map { "    - \($0.scalarString!)" }.joined(separator: "\n")
        #expect(result == "ios:   # iOS\n  appIds:\n\(items)\nnext: 1\n")
    }

    @Test("Removing an item from a flow list and from a block list")
    func removeItems() throws {
        let flow = try edit(
            "ids: [a, b, c]   # ids\nnext: 1\n",
            expecting: .mapping([("ids", Self.list("a", "c")), ("next", .scalar("1"))])
        ) { try $0.remove(at: [.key("ids"), .index(1)]) }
        #expect(flow == "ids: [a, c]   # ids\nnext: 1\n")

        let text = "ids:\n  # first\n  - a   # A\n  # second\n  - b   # B\n  - c\nnext: 1\n"
        let block = try edit(text, expecting: .mapping([("ids", Self.list("a", "c")), ("next", .scalar("1"))])) {
            try $0.remove(at: [.key("ids"), .index(1)])
        }
        #expect(block == "ids:\n  # first\n  - a   # A\n  # second\n  - c\nnext: 1\n")

        let last = try edit("ids:\n  - a\n", expecting: .mapping([("ids", .sequence([]))])) {
            try $0.remove(at: [.key("ids"), .index(0)])
        }
        #expect(last == "ids: []\n")
    }

    @Test("Removing keys, including the first key of a `- key:` item")
    func removeKeys() throws {
        let text = "apps:\n  - id: a\n    name: A   # shown\n    # note\n    delivery: { mode: x }\nend: 1"
        let result = try edit(
            text, expecting: .mapping([("apps", .sequence([.mapping([("id", .scalar("a"))])])), ("end", .scalar("1"))])
        ) {
            try $0.remove(at: [.key("apps"), .index(0), .key("name")])
            try $0.remove(at: [.key("apps"), .index(0), .key("delivery")])
        }
        #expect(result == "apps:\n  - id: a\n    # note\nend: 1")

        let first = try edit(text, expecting: try parsed(text).removing(at: [.key("apps"), .index(0), .key("id")])) {
            try $0.remove(at: [.key("apps"), .index(0), .key("id")])
        }
        #expect(first.hasPrefix("apps:\n  - name: A   # shown\n"))
        var editor = try YAMLDocumentEditor(text: text)
        #expect(throws: YAMLEditError.self) { try editor.remove(at: [.key("missing")]) }
    }

    // MARK: Quoting

    @Test("Tricky scalars are quoted only when needed and read back unchanged")
    func quoting() throws {
        let quoted = [
            "yes", "No", "ON", "off", "true", "null", "~", "1.0", "0x1F", "1_000", "12:30", "1e5", ".inf",
            "2024-01-01", "a: b", "# x", "a #b", "", " lead", "trail ", "-x", "[x]", "{x}", "*x", "&x", "!x", "|x",
            ">x", "'x", "\"x", "%x", "@x", "`x", "key:", "line\nbreak", "tab\there",
        ]
        let plain = [
            "ms-app://s-1-15-2-1", "env:X", "file:AuthKey.p8", "6f1c", "com.contoso.notes", "Contoso Notes",
            "1.2.3", "a-b", "yesterday", "x#y", "https://login.contoso.com", "127.0.0.1", "back\\slash \"q\"",
        ]
        let renderer = YAMLRenderer()
        for string in quoted { #expect(renderer.scalar(string).hasPrefix("\""), "\(string) should be quoted") }
        for string in plain { #expect(renderer.scalar(string) == string, "\(string) should be plain") }
        #expect(renderer.scalar("a, b") == "a, b")
        #expect(renderer.scalar("a, b", inFlow: true) == "\"a, b\"")

        let all = quoted + plain + ["a, b", "[a]", "é ü ✓", "\u{7}bell"]
        let value = YAMLValue.mapping(all.map { ($0, .scalar($0)) } + [("list", .sequence(all.map(YAMLValue.scalar)))])
        var block = try YAMLDocumentEditor(text: "")
        try block.set(value, at: [.key("block")])
        #expect(try parsed(block.text) == .mapping([("block", value)]))
        var flow = try YAMLDocumentEditor(text: "flow: {}\n")
        try flow.set(value, at: [.key("flow")])
        #expect(try parsed(flow.text) == .mapping([("flow", value)]))
        #expect(flow.text.hasPrefix("flow:\n"))  // too long for one line
        let short = YAMLValue.mapping([("k", .scalar("env:X")), ("u", .scalar("ms-app://s-1-15-2-1"))])
        try flow.set(short, at: [.key("flow")])
        #expect(flow.text == "flow:\n  k: env:X\n  u: ms-app://s-1-15-2-1\n")
        let inFlow = try edit("f: {a: 1}\n", expecting: .mapping([("f", short)])) { try $0.set(short, at: [.key("f")]) }
        #expect(inFlow == "f: {k: env:X, u: ms-app://s-1-15-2-1}\n")
    }

    // MARK: Style and errors

    @Test("The file's indentation step and final newline are kept")
    func styleDetection() throws {
        let text = "a:\n    b:\n        c: 1\n    d: 2"
        let result = try edit(
            text,
            expecting: .mapping([
                (
                    "a",
                    .mapping([
                        ("b", .mapping([("c", .scalar("1"))])), ("d", .scalar("2")),
                        ("e", .mapping([("f", .scalar("x"))])),
                    ])
                )
            ])
        ) { try $0.set(.scalar("x"), at: [.key("a"), .key("e"), .key("f")]) }
        #expect(result == "a:\n    b:\n        c: 1\n    d: 2\n    e:\n        f: x")

        let removed = try edit("a: 1\nb: 2", expecting: .mapping([("a", .scalar("1"))])) {
            try $0.remove(at: [.key("b")])
        }
        #expect(removed == "a: 1")
    }

    @Test("Columns are counted in Unicode scalars, as Yams counts them")
    func unicodeColumns() throws {
        let text = "a: { t: \"é✓🎉\", m: [x] }  # ü\nb: ö   # é\n"
        let result = try edit(
            text,
            expecting: .mapping([
                ("a", .mapping([("t", .scalar("é✓🎉")), ("m", Self.list("x", "ÿ"))])), ("b", .scalar("née")),
            ])
        ) {
            try $0.set(Self.list("x", "ÿ"), at: [.key("a"), .key("m")])
            try $0.set(.scalar("née"), at: [.key("b")])
        }
        #expect(result == "a: { t: é✓🎉, m: [x, ÿ] }  # ü\nb: née   # é\n")
    }

    @Test("Scalars and collections replace each other")
    func kindChanges() throws {
        let text = "a: 1   # one\nb:\n  x: 1\n  y: 2\nc: 3\n"
        let result = try edit(
            text,
            expecting: .mapping([("a", .mapping([("k", .scalar("v"))])), ("b", .scalar("none")), ("c", .scalar("3"))])
        ) {
            try $0.set(.mapping([("k", .scalar("v"))]), at: [.key("a")])
            try $0.set(.scalar("none"), at: [.key("b")])
        }
        #expect(result == "a:   # one\n  k: v\nb: none\nc: 3\n")
    }

    @Test("Invalid documents are refused with a position")
    func errors() throws {
        let error = #expect(throws: YAMLEditError.self) { try YAMLDocumentEditor(text: "a: [1, 2\nb: 3\n") }
        #expect(error?.line != nil && error?.column != nil)
        #expect(error?.description.hasPrefix("\(error?.line ?? 0):") == true)
        #expect(throws: YAMLEditError.self) { try YAMLDocumentEditor(text: "- a\n- b\n") }
        #expect(throws: YAMLEditError.self) { try YAMLDocumentEditor(text: "a: &x 1\nb: *x\n") }
        #expect(throws: YAMLEditError.self) { try YAMLDocumentEditor(text: "a: 1\r\nb: 2\r\n") }
        #expect(throws: YAMLEditError.self) { try YAMLDocumentEditor(text: "? a\n: 1\n") }
        #expect(try YAMLDocumentEditor(text: "# only a comment\n").value(at: []) == .mapping([]))
        var editor = try YAMLDocumentEditor(text: "a: 1\n")
        #expect(throws: YAMLEditError.self) { try editor.set(.scalar("x"), at: [.key("a"), .key("b")]) }
        #expect(throws: YAMLEditError.self) { try editor.append(.scalar("x"), toSequenceAt: [.key("a")]) }
        let duplicate = YAMLValue.mapping([("k", .scalar("1")), ("k", .scalar("2"))])
        #expect(throws: YAMLEditError.self) { try editor.set(duplicate, at: [.key("b")]) }
        #expect(editor.text == "a: 1\n")
    }

    // MARK: Sweep

    /// Every path in `value`, in document order.
    static func paths(_ value: YAMLValue, _ prefix: [YAMLPathComponent] = []) -> [[YAMLPathComponent]] {
        switch value {
        case .scalar:
            return [prefix]
        case let .mapping(pairs):
            return [prefix] + pairs.flatMap { paths($0.value, prefix + [.key($0.key)]) }
        case let .sequence(items):
            return [prefix] + items.enumerated().flatMap { paths($1, prefix + [.index($0)]) }
        }
    }

    @Test("Every kind of edit at every path of hub.yaml parses as intended; sets are idempotent")
    func sweep() throws {
        let original = try YAMLDocumentEditor(text: Self.hubYAML)
        let values: [YAMLValue] = [
            .scalar("new value"), .scalar(""), .mapping([]), .sequence([]), Self.list("a", "b c"),
            .mapping([("k", .scalar("v")), ("l", Self.list("x"))]),
            .sequence([.mapping([("id", .scalar("i")), ("m", .mapping([("q", .scalar("r"))]))])]),
        ]
        let document = try parsed(Self.hubYAML)
        for path in Self.paths(original.rootValue) where !path.isEmpty {
            let edits = values.map { (value: $0, path: path) } + [(.scalar("z"), path + [.key("added"), .key("deep")])]
            for (value, target) in edits {
                var editor = original
                do {
                    try editor.set(value, at: target)
                } catch let error as YAMLEditError {
                    // Only edits that do not fit the structure may be refused.
                    #expect(error.message.contains("does not match"), "\(YAMLValue.describe(target)): \(error)")
                    continue
                }
                #expect(try parsed(editor.text) == document.setting(value, at: target), "\(editor.text)")
                var again = editor
                try again.set(value, at: target)
                #expect(again.text == editor.text, "not idempotent at \(YAMLValue.describe(target))")
            }
            var editor = original
            try editor.remove(at: path)
            #expect(try parsed(editor.text) == document.removing(at: path))
        }
    }
}
