import Testing
import Yams

@testable import HubConfig

@Suite("YAML document editor")
struct YAMLDocumentEditorTests {
    /// A hub.yaml with comments everywhere, flow and block styles, and a blank line between apps.
    static let hubYAML = """
        # NotificationHub configuration
        server: { listen: "127.0.0.1:8080", adminToken: env:HUB_ADMIN_TOKEN }
        store:  { sqlite: { path: hub.sqlite } }

        apps:
          # The first app
          - id: notes.contoso.com
            name: Contoso Notes
            platforms:                                     # 1. supported platforms
              ios:     { appIds: [com.contoso.notes, com.contoso.notes.beta] }
              android: { appIds: [com.contoso.notes] }
            identity:
              - { issuer: "https://login.contoso.com", audiences: [6f1c], jwks: file:jwks.json }
            credentials:
              apns: { teamId: ABCDE12345, keyId: XYZ987ABCD, privateKey: file:AuthKey.p8, environment: production }
            publishers: [ { name: backend, key: env:CONTOSO_PUBLISHER_KEY } ]
            delivery: { mode: shoulderTap }

          - id: photos.contoso.com
            name: Photos
            platforms:
              android:
                appIds:
                  - com.contoso.photos   # main

        """

    // MARK: Helpers

    /// The document Yams reads from `text` (an empty document is an empty mapping).
    func parsed(_ text: String) throws -> YAMLValue {
        try Yams.compose(yaml: text).map(YAMLValue.init(node:)) ?? .mapping([])
    }

    /// The lines that differ between two texts with the same number of lines.
    func changedLines(_ before: String, _ after: String) -> [(before: Substring, after: Substring)] {
        let old = before.split(separator: "\n", omittingEmptySubsequences: false)
        let new = after.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(old.count == new.count, "line counts differ:\n\(after)")
        return zip(old, new).filter { $0 != $1 }.map { (before: $0, after: $1) }
    }

    /// Applies `edit`, checks that Yams reads the result as `expected`, and that applying the
    /// same edit again changes nothing.
    @discardableResult
    func edit(
        _ text: String, expecting expected: YAMLValue, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (inout YAMLDocumentEditor) throws -> Void
    ) throws -> String {
        var editor = try YAMLDocumentEditor(text: text)
        try body(&editor)
        let result = editor.text
        #expect(try parsed(result) == expected, "unexpected document:\n\(result)", sourceLocation: sourceLocation)
        return result
    }

    static func list(_ items: String...) -> YAMLValue { .sequence(items.map(YAMLValue.scalar)) }

    // MARK: No-op and scalars

    @Test("Setting values equal to the current ones leaves the text byte-identical")
    func noOpSet() throws {
        var editor = try YAMLDocumentEditor(text: Self.hubYAML)
        let root = try #require(editor.value(at: []))
        let app = try #require(editor.value(at: [.key("apps"), .index(0)]))
        try editor.set(app, at: [.key("apps"), .index(0)])
        try editor.set(root, at: [])
        try editor.set(.scalar("Photos"), at: [.key("apps"), .index(1), .key("name")])
        try editor.set(.scalar("127.0.0.1:8080"), at: [.key("server"), .key("listen")])
        #expect(editor.text == Self.hubYAML)
    }

    @Test("Replacing a scalar keeps the comment at the end of its line")
    func scalarKeepsTrailingComment() throws {
        let text = "name: old   # the display name\nlevel: 3\n"
        let result = try edit(text, expecting: .mapping([("name", .scalar("new value")), ("level", .scalar("3"))])) {
            try $0.set(.scalar("new value"), at: [.key("name")])
        }
        #expect(result == "name: new value   # the display name\nlevel: 3\n")
    }

    @Test("Changing one nested key leaves sibling comments and blank lines alone")
    func nestedChangeKeepsSiblings() throws {
        let text = """
            # top comment
            limits:
              # lifetimes
              defaultLifetime: 7d     # default

              maxLifetime: 30d        # furthest

              # payload
              maxPayloadBytes: 4096   # bytes
            other: x

            """
        var editor = try YAMLDocumentEditor(text: text)
        try editor.set(.scalar("60d"), at: [.key("limits"), .key("maxLifetime")])
        let changes = changedLines(text, editor.text)
        #expect(changes.count == 1)
        #expect(changes.first?.after == "  maxLifetime: 60d        # furthest")
        #expect(editor.value(at: [.key("limits"), .key("maxLifetime")]) == .scalar("60d"))
    }

    // MARK: Inserting and appending

    @Test("Appending an app keeps the existing apps and all comments untouched")
    func appendApp() throws {
        let newApp = YAMLValue.mapping([
            ("id", .scalar("mail.contoso.com")),
            ("name", .scalar("Contoso Mail")),
            ("platforms", .mapping([("ios", .mapping([("appIds", Self.list("com.contoso.mail"))]))])),
        ])
        var expected = try parsed(Self.hubYAML)
        expected = try expected.setting(newApp, at: [.key("apps"), .index(2)])
        let result = try edit(Self.hubYAML, expecting: expected) {
            try $0.append(newApp, toSequenceAt: [.key("apps")])
        }
        let added = """

              - id: mail.contoso.com
                name: Contoso Mail
                platforms:
                  ios:
                    appIds: [com.contoso.mail]

            """
        #expect(result == Self.hubYAML + added)
        // Appending again adds a second copy; setting it instead is a no-op.
        var editor = try YAMLDocumentEditor(text: result)
        try editor.set(newApp, at: [.key("apps"), .index(2)])
        #expect(editor.text == result)
    }

    @Test("A new key goes after the last key of its mapping, at the same indentation")
    func insertKey() throws {
        let text = "server:\n  listen: x   # where\n  # trailing comment\nstore: y\n"
        let result = try edit(
            text,
            expecting: .mapping([
                ("server", .mapping([("listen", .scalar("x")), ("adminToken", .scalar("env:TOKEN"))])),
                ("store", .scalar("y")), ("logging", .mapping([("level", .scalar("info"))])),
            ])
        ) {
            try $0.set(.scalar("env:TOKEN"), at: [.key("server"), .key("adminToken")])
            try $0.set(.scalar("info"), at: [.key("logging"), .key("level")])
        }
        #expect(
            result
                == "server:\n  listen: x   # where\n  adminToken: env:TOKEN\n  # trailing comment\nstore: y\nlogging:\n  level: info\n"
        )
    }

    @Test("`apps:` is created as a block sequence when absent, also in an empty document")
    func createApps() throws {
        let app = YAMLValue.mapping([("id", .scalar("a.example.com")), ("name", .scalar("A"))])
        let text = "# config\nserver: { listen: x }\n"
        let result = try edit(
            text, expecting: .mapping([("server", .mapping([("listen", .scalar("x"))])), ("apps", .sequence([app]))])
        ) { try $0.append(app, toSequenceAt: [.key("apps")]) }
        #expect(result == text + "apps:\n  - id: a.example.com\n    name: A\n")

        let empty = try edit("", expecting: .mapping([("apps", .sequence([.scalar("x")]))])) {
            try $0.append(.scalar("x"), toSequenceAt: [.key("apps")])
        }
        #expect(empty == "apps:\n  - x\n")

        let null = try edit("apps:   # none yet\n", expecting: .mapping([("apps", .sequence([app]))])) {
            try $0.append(app, toSequenceAt: [.key("apps")])
        }
        #expect(null == "apps:   # none yet\n  - id: a.example.com\n    name: A\n")
    }

    @Test("Appending to a block list of scalars keeps the comments on its items")
    func appendToBlockList() throws {
        let path: [YAMLPathComponent] = [.key("apps"), .index(1), .key("platforms"), .key("android"), .key("appIds")]
        var editor = try YAMLDocumentEditor(text: Self.hubYAML)
        try editor.set(Self.list("com.contoso.photos", "com.contoso.photos.beta"), at: path)
        #expect(editor.text.hasSuffix("      - com.contoso.photos   # main\n          - com.contoso.photos.beta\n"))
        #expect(editor.text.hasPrefix(Self.hubYAML.dropLast()))
    }

    // MARK: The realistic document

    @Test("Updating app 1's Android IDs in hub.yaml changes exactly one line")
    func realisticUpdate() throws {
        var editor = try YAMLDocumentEditor(text: Self.hubYAML)
        var app = try #require(editor.value(at: [.key("apps"), .index(0)]))
        app = try app.setting(
            Self.list("com.contoso.notes", "com.contoso.notes.wear"),
            at: [.key("platforms"), .key("android"), .key("appIds")])
        try editor.set(app, at: [.key("apps"), .index(0)])
        let changes = changedLines(Self.hubYAML, editor.text)
        #expect(changes.count == 1)
        #expect(changes.first?.before == "      android: { appIds: [com.contoso.notes] }")
        #expect(changes.first?.after == "      android: { appIds: [com.contoso.notes, com.contoso.notes.wear] }")
        let expected = try parsed(Self.hubYAML).setting(app, at: [.key("apps"), .index(0)])
        #expect(try parsed(editor.text) == expected)

        let once = editor.text
        try editor.set(app, at: [.key("apps"), .index(0)])
        #expect(editor.text == once)
    }

    @Test("Changing, adding and removing keys of an app in one `set`")
    func appDiff() throws {
        var editor = try YAMLDocumentEditor(text: Self.hubYAML)
        var app = try #require(editor.value(at: [.key("apps"), .index(1)]))
        app = try app.setting(.scalar("Contoso Photos"), at: [.key("name")])
        app = try app.setting(.mapping([("mode", .scalar("shoulderTap"))]), at: [.key("delivery")])
        app = try app.removing(at: [.key("platforms")])
        try editor.set(app, at: [.key("apps"), .index(1)])
        #expect(try parsed(editor.text) == parsed(Self.hubYAML).setting(app, at: [.key("apps"), .index(1)]))
        #expect(
            editor.text.hasSuffix(
                "  - id: photos.contoso.com\n    name: Contoso Photos\n    delivery:\n      mode: shoulderTap\n"))
        #expect(
            editor.text.hasPrefix(Self.hubYAML.prefix(upTo: Self.hubYAML.firstRange(of: "  - id: photos")!.lowerBound)))
    }
}
