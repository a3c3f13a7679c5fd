import Foundation
import HubAPNS
import HubCore
import HubFCM
import HubWNS
import Testing

@testable import HubConfig

/// The folder of this file's fixtures.
let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path
/// The repository's root (for the sample hub.yaml).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// Loads YAML text as if it were a hub.yaml in the fixtures folder.
func load(_ text: String, environment: [String: String] = [:]) -> ConfigLoader.Result {
    ConfigLoader(environment: environment, plugins: firstPartyPlugins).load(
        text: text, path: "hub.yaml", baseDirectory: fixtures)
}

func errorLines(_ result: ConfigLoader.Result) -> [String] { result.errors.map(\.description) }

@Suite("hub.yaml loading")
struct ConfigLoaderTests {
    @Test("the sample hub.yaml at the repository root loads without errors")
    func sampleLoads() throws {
        let result = ConfigLoader(environment: [:], plugins: firstPartyPlugins).load(path: repositoryRoot + "/hub.yaml")
        #expect(result.errors.isEmpty, "\(errorLines(result))")
        let file = try result.get()
        let app = try #require(file.apps.first)
        #expect(app.id == "notes.contoso.com")
        #expect(app.platforms[.ios] == ["com.contoso.notes", "com.contoso.notes.beta"])
        #expect(app.platforms[.android] == ["com.contoso.notes"])
        #expect(app.platforms[.windows] == ["Contoso.Notes_8wekyb3d8bbwe"])
        #expect(app.publishers.map(\.name) == ["backend"])
        #expect(file.server.adminToken != nil)
        #expect(file.limits.maxPayloadBytes == 4096)
    }

    @Test("five different mistakes give five diagnostics at the right line:column")
    func fiveMistakes() {
        let result = ConfigLoader(environment: [:], plugins: firstPartyPlugins).load(
            path: fixtures + "/five-mistakes.yaml")
        let errors = result.errors
        #expect(errors.count == 5, "\(errorLines(result))")
        let expected: [(Int, Int, String)] = [
            (3, 3, "did you mean 'adminToken'"),
            (8, 42, "'bad id!' is not a valid iOS bundle ID"),
            (11, 7, "does not select the windows platform"),
            (13, 9, "is missing 'key'"),
            (16, 27, "already mapped by the app 'notes.contoso.com'"),
        ]
        for (line, column, text) in expected {
            #expect(
                errors.contains { $0.line == line && $0.column == column && $0.message.contains(text) },
                "expected \(line):\(column) \(text) in \(errorLines(result))")
        }
        #expect(errors.allSatisfy { $0.file.hasSuffix("five-mistakes.yaml") })
    }

    @Test("an unknown key suggests the closest known one")
    func unknownKey() {
        let result = load("apps:\n  - id: a.example.com\n    platfroms: { ios: { appIds: [com.a.b] } }\n")
        let lines = errorLines(result)
        #expect(
            lines.contains {
                $0.contains("hub.yaml:3:5: error: unknown key 'platfroms'") && $0.contains("did you mean 'platforms'")
            })
        #expect(lines.contains { $0.contains("is missing 'platforms'") })
    }

    @Test("an eleventh app ID is refused at its own position")
    func eleventhID() {
        let ids = (1...11).map { "com.contoso.app\($0)" }.joined(separator: ", ")
        let result = load("apps:\n  - id: a.example.com\n    platforms:\n      ios: { appIds: [\(ids)] }\n")
        #expect(result.errors.count == 1)
        let error = result.errors.first
        #expect(error?.message.contains("at most 10") == true)
        #expect(error?.message.contains("com.contoso.app11") == true)
        #expect(error?.line == 4)
        let ten = (1...10).map { "com.contoso.app\($0)" }.joined(separator: ", ")
        #expect(load("apps:\n  - id: a.example.com\n    platforms:\n      ios: { appIds: [\(ten)] }\n").errors.isEmpty)
    }

    @Test("malformed IDs of every platform are reported with what to do")
    func malformedIDs() {
        let text = """
            apps:
              - id: a.example.com
                platforms:
                  ios: { appIds: [noDots] }
                  android: { appIds: [com.1bad.app] }
                  windows: { appIds: [Contoso.Notes_TOOSHORT] }
                  web: { appIds: ["https://a.example.com/path"] }
            """
        let messages = load(text).errors.map(\.message)
        #expect(messages.count == 4)
        #expect(messages.contains { $0.contains("reverse-DNS") })
        #expect(messages.contains { $0.contains("must start with a letter") })
        #expect(messages.contains { $0.contains("publisher hash") })
        #expect(messages.contains { $0.contains("without a path") })
    }

    @Test("secret references that do not resolve name the variable or path and never print a value")
    func unresolvedSecrets() {
        let text = """
            server: { adminToken: env:HUB_ADMIN_TOKEN_UNSET, cursorSecret: file:nope/missing.key }
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.a.b] } }
                publishers: [ { name: backend, key: env:PUBLISHER_KEY } ]
            """
        let result = load(text, environment: ["PUBLISHER_KEY": "s3cr3t-value-that-must-not-leak"])
        let lines = errorLines(result)
        #expect(lines.contains { $0.contains("HUB_ADMIN_TOKEN_UNSET, which is not set") })
        #expect(lines.contains { $0.contains("nope/missing.key, which does not exist") })
        #expect(result.diagnostics.allSatisfy { !$0.description.contains("s3cr3t") })
        #expect(result.errors.count == 2)
    }

    @Test("a .p8 that is not P-256 and an incomplete service account are refused")
    func badCredentials() {
        let text = """
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.a.b] }, android: { appIds: [com.a.b] } }
                credentials:
                  apns: { teamId: ABCDE12345, keyId: TEST123456, privateKey: file:AuthKey_P384.p8 }
                  fcm: { serviceAccount: file:service-account-incomplete.json }
            """
        let lines = errorLines(load(text))
        #expect(lines.count == 2)
        #expect(lines.contains { $0.contains("hub.yaml:5:") && $0.contains("not a P-256") })
        #expect(lines.contains { $0.contains("hub.yaml:6:") && $0.contains("lacks client_email, token_uri") })
    }

    @Test("valid credentials of every provider load")
    func goodCredentials() throws {
        let text = """
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.a.b] }, android: { appIds: [com.a.b] }, windows: { appIds: [Contoso.Notes_8wekyb3d8bbwe] } }
                credentials:
                  apns: { teamId: ABCDE12345, keyId: TEST123456, privateKey: file:AuthKey_TEST123456.p8, environment: development }
                  fcm: { serviceAccount: file:service-account.json }
                  wns: { packageSid: "ms-app://s-1-15-2-1-2-3", clientSecret: env:WNS_SECRET }
            """
        let result = load(text, environment: ["WNS_SECRET": "wns-secret"])
        #expect(result.errors.isEmpty, "\(errorLines(result))")
        let app = try #require(try result.get().apps.first)
        #expect(app.credentials.apns?.environment == .development)
        #expect(app.credentials.fcm?.projectID == "contoso-notes-test")
        #expect(app.credentials.wns?.kind == "package SID")
        #expect(!"\(app.credentials)".contains("wns-secret"))
        #expect(!"\(app.credentials)".contains("PRIVATE KEY"))
    }

    @Test("YAML syntax errors carry their position")
    func syntaxError() {
        let result = load("apps:\n  - id: [unclosed\n")
        #expect(result.errors.count == 1)
        #expect(result.errors.first?.line ?? 0 > 0)
        #expect(result.errors.first?.message.contains("not valid YAML") == true)
    }

    @Test("wrong types, unknown choices and bad values are each reported")
    func typesAndChoices() {
        let text = """
            server: { listen: "nowhere" }
            logging: { format: xml }
            limits: { maxLifetime: 3 weeks }
            apps:
              - id: not_a_domain
                platforms: { ios: { appIds: com.a.b } }
                delivery: { mode: visibel, badge: unred }
            """
        let lines = errorLines(load(text))
        #expect(lines.count == 7, "\(lines)")
        #expect(lines.contains { $0.contains("delivery.badge' must be one of unread, not 'unred'") })
        #expect(lines.contains { $0.contains("host:port") })
        #expect(lines.contains { $0.contains("one of text, json") })
        #expect(lines.contains { $0.contains("duration such as") })
        #expect(lines.contains { $0.contains("not a domain name") })
        #expect(lines.contains { $0.contains("must be a list") })
        #expect(lines.contains { $0.contains("did you mean 'visible'") })
    }

    @Test("the same app twice is an error")
    func duplicateApp() {
        let text = """
            apps:
              - { id: a.example.com, platforms: { ios: { appIds: [com.a.b] } } }
              - { id: a.example.com, platforms: { ios: { appIds: [com.a.c] } } }
            """
        #expect(errorLines(load(text)).contains { $0.contains("configured twice (first at line 2)") })
    }
}
