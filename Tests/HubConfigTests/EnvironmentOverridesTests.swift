import Foundation
import HubAPNS
import HubCore
import HubFCM
import HubTesting
import HubWNS
import Testing

@testable import HubConfig

@Suite("hub.yaml keys from the environment")
struct EnvironmentOverridesTests {
    static let yaml = """
        server: { listen: "127.0.0.1:8080" }
        apps:
          - id: notes.contoso.com
            platforms: { ios: { appIds: [com.contoso.notes] } }
            publishers: [ { name: backend, key: file:publisher.key } ]
          - id: photos.contoso.com
            platforms: { android: { appIds: [com.contoso.photos] } }
            publishers: [ { name: backend, key: file:photos-publisher.key } ]
        """

    @Test("the naming rule: HUB_ + the key's path in upper snake case, one rule for every key")
    func names() {
        #expect(EnvironmentOverrides.variable(for: ["server", "listen"]) == "HUB_SERVER_LISTEN")
        #expect(EnvironmentOverrides.variable(for: ["server", "adminToken"]) == "HUB_SERVER_ADMIN_TOKEN")
        #expect(EnvironmentOverrides.variable(for: ["store", "postgres", "url"]) == "HUB_STORE_POSTGRES_URL")
        #expect(
            EnvironmentOverrides.variable(for: ["apps", "notes.contoso.com", "delivery", "mode"])
                == "HUB_APPS_NOTES_CONTOSO_COM_DELIVERY_MODE")
    }

    @Test("scalars, whole sections, an app by its ID, a list in flow style; secrets from the variable")
    func overrides() throws {
        let file = try load(
            Self.yaml,
            environment: [
                "HUB_SERVER_LISTEN": "0.0.0.0:9090",
                "HUB_SERVER_ADMIN_TOKEN": "admin-token-from-env",
                "HUB_SERVER_MAX_BODY_BYTES": "2048",
                "HUB_SERVER_MAX_BATCH_BODY_BYTES": "1048576",
                "HUB_LOGGING": "{ format: json, level: debug }",
                "HUB_LIMITS_MAX_PAYLOAD_BYTES": "1024",
                "HUB_STORE_SQLITE_PATH": "/var/lib/hub/hub.sqlite",
                "HUB_APPS_PHOTOS_CONTOSO_COM_DELIVERY_MODE": "visible",
                "HUB_APPS_PHOTOS_CONTOSO_COM_DELIVERY_BADGE": "unread",
                "HUB_APPS_NOTES_CONTOSO_COM_PLATFORMS_IOS_APP_IDS": "[com.contoso.notes, com.contoso.notes.beta]",
                "HUB_APPS_NOTES_CONTOSO_COM_PUBLISHERS": "[{name: ci, key: env:CI_KEY}]",
                "CI_KEY": "ci-key-0123456789",
                "HUB_TRANSPORTS_WNS_ALLOWED_HOSTS": "[127.0.0.1:4444, wns.test]",
            ]
        ).get()
        #expect(file.server.host == "0.0.0.0" && file.server.port == 9090)
        #expect(file.server.maxBodyBytes == 2048)
        #expect(file.server.maxBatchBodyBytes == 1_048_576)
        let outOfRange = load(Self.yaml, environment: ["HUB_SERVER_MAX_BATCH_BODY_BYTES": "1000"]).errors
        #expect(outOfRange.contains { $0.message.contains("server.maxBatchBodyBytes") }, "\(outOfRange)")
        #expect(file.server.adminToken?.reveal() == "admin-token-from-env")
        #expect(file.server.adminToken?.source == "env:HUB_SERVER_ADMIN_TOKEN")
        #expect(file.logging.format == .json && file.logging.level == "debug")
        #expect(file.limits.maxPayloadBytes == 1024)
        guard case .sqlite(let path) = file.store else { throw CocoaError(.featureUnsupported) }
        #expect(path == "/var/lib/hub/hub.sqlite")
        let notes = try #require(file.apps.first { $0.id == "notes.contoso.com" })
        let photos = try #require(file.apps.first { $0.id == "photos.contoso.com" })
        #expect(photos.delivery.mode == .visible)
        #expect(notes.delivery.mode != .visible, "only the named app changes")
        #expect(photos.delivery.badge == .unread, "delivery.badge from the environment, beside mode")
        #expect(notes.delivery.badge == nil, "no badge unless asked")
        #expect(notes.platforms[.ios] == ["com.contoso.notes", "com.contoso.notes.beta"])
        #expect(notes.publishers.map(\.name) == ["ci"])
        #expect(notes.publishers.first?.key.reveal() == "ci-key-0123456789")
        #expect(photos.publishers.map(\.name) == ["backend"])
    }

    @Test("a whole store section replaces the file's: sqlite in hub.yaml, postgres from the environment")
    func storeSection() throws {
        let file = try load(
            Self.yaml,
            environment: [
                "HUB_STORE": "{ postgres: { url: env:HUB_DATABASE_URL, poolSize: 4 } }",
                "HUB_DATABASE_URL": "postgres://hub:pw@127.0.0.1/hub",
            ]
        ).get()
        guard case .postgres(let url, let pool) = file.store else {
            Issue.record("expected postgres, got \(file.store)")
            return
        }
        #expect(url.source == "env:HUB_DATABASE_URL" && pool == 4)
    }

    @Test("a bad value names the variable; a variable that names no key is an error with a suggestion")
    func problems() {
        let result = load(
            Self.yaml,
            environment: [
                "HUB_SERVER_LISTN": "0.0.0.0:1", "HUB_LIMITS_MAX_PAYLOAD_BYTES": "lots",
                "HUB_APPS_OTHER_EXAMPLE_COM_NAME": "x",
            ])
        let lines = errorLines(result)
        #expect(
            lines.contains(
                "environment variable HUB_LIMITS_MAX_PAYLOAD_BYTES: error: 'limits.maxPayloadBytes' must be a whole number from 256 to 1048576"
            ), "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("environment variable HUB_SERVER_LISTN: error: names no hub.yaml key") }
                && lines.contains { $0.contains("did you mean HUB_SERVER_LISTEN?") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("environment variable HUB_APPS_OTHER_EXAMPLE_COM_NAME") }, "\(lines)")
        #expect(result.errors.count == 3)
    }

    @Test(
        "a transport's settings from HUB_TRANSPORTS_<ID>_<KEY>; an earlier version's HUB_<ID>_<KEY> still applies, with a warning naming the new one"
    )
    func transportSettings() throws {
        let result = ConfigLoader(
            environment: [
                "HUB_TRANSPORTS_APNS_TIMEOUT": "3s", "HUB_APNS_SERVER": "127.0.0.1:2197",
                "HUB_FCM_SEND_URL": "https://127.0.0.1:4443", "HUB_TRANSPORTS_FCM_SEND_URL": "https://127.0.0.1:5443",
                "HUB_TRANSPORTS_WNS_ALLOWED_HOSTS": "127.0.0.1:4444, wns.test",
            ], plugins: firstPartyPlugins
        ).load(text: Self.yaml, path: "hub.yaml", baseDirectory: fixtures)
        let file = try result.get()
        let apns = try #require(file.transports[.apns] as? APNSTransport.Configuration)
        #expect(apns.requestTimeout == .seconds(3))
        #expect(apns.production == .init(host: "127.0.0.1", port: 2197) && apns.development == apns.production)
        let fcm = try #require(file.transports[.fcm] as? FCMConfiguration)
        #expect(fcm.sendBaseURL == "https://127.0.0.1:5443", "the new name wins over the old one")
        let wns = try #require(file.transports[.wns] as? WNSConfiguration)
        #expect(wns.channelPolicy.additionalHosts == ["127.0.0.1:4444", "wns.test"])
        let warnings = result.warnings.map(\.description)
        #expect(
            warnings.contains {
                $0.hasPrefix("environment variable HUB_APNS_SERVER: warning: is read as HUB_TRANSPORTS_APNS_SERVER")
            }, "\(warnings)")
        #expect(!warnings.contains { $0.contains("HUB_FCM_SEND_URL") }, "an old name the new one replaces is ignored")
        // A wrong value set by a variable is reported against the variable.
        let wrong = ConfigLoader(environment: ["HUB_TRANSPORTS_APNS_SERVER": "nowhere"], plugins: firstPartyPlugins)
            .load(text: Self.yaml, path: "hub.yaml", baseDirectory: fixtures)
        #expect(
            wrong.errors.map(\.description) == [
                "environment variable HUB_TRANSPORTS_APNS_SERVER: error: 'transports.apns.server' must be host:port, such as 127.0.0.1:2197"
            ])
    }

    @Test("overrides are off when asked (map-app edits the file as written)")
    func off() throws {
        let file = try ConfigLoader(
            environment: ["HUB_SERVER_LISTEN": "0.0.0.0:9090"], applyEnvironment: false, plugins: firstPartyPlugins
        )
        .load(text: Self.yaml, path: "hub.yaml", baseDirectory: fixtures).get()
        #expect(file.server.port == 8080)
    }

    @Test("the effective configuration redacts inline secrets and keeps references")
    func effective() throws {
        let directory = try TemporaryFolder.make("env")
        let path = directory.appendingPathComponent("hub.yaml").path
        try (Self.yaml + "\nstore: { postgres: { url: \"postgres://hub:pw-in-file@db/hub\" } }\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        let effective = try #require(
            ConfigLoader(
                environment: ["HUB_SERVER_ADMIN_TOKEN": "tok-from-env-0123456789", "HUB_SERVER_LISTEN": "0.0.0.0:1"],
                plugins: firstPartyPlugins
            )
            .effective(path: path))
        #expect(effective.text.contains("listen: 0.0.0.0:1"))
        #expect(effective.text.contains("key: file:publisher.key"))
        #expect(!effective.text.contains("tok-from-env-0123456789"))
        #expect(!effective.text.contains("pw-in-file"))
        #expect(effective.text.components(separatedBy: "<redacted>").count == 3)
        #expect(effective.overrides.map(\.variable) == ["HUB_SERVER_ADMIN_TOKEN", "HUB_SERVER_LISTEN"])
    }

    /// The override schema must list every key the reader allows, or a new hub.yaml key could not be
    /// set from the environment. The reader's own list comes from its "allowed keys" diagnostic.
    @Test(
        "the override schema knows every key the hub.yaml reader allows",
        arguments: [
            ("", "zzzzzzzzzzzz: 1\n"),
            ("server", "server: { zzzzzzzzzzzz: 1 }\n"),
            ("store", "store: { zzzzzzzzzzzz: 1 }\n"),
            ("store.sqlite", "store: { sqlite: { path: x, zzzzzzzzzzzz: 1 } }\n"),
            ("store.postgres", "store: { postgres: { url: env:U, zzzzzzzzzzzz: 1 } }\n"),
            ("logging", "logging: { zzzzzzzzzzzz: 1 }\n"),
            ("limits", "limits: { zzzzzzzzzzzz: 1 }\n"),
            ("apps.*", "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b] } }, zzzzzzzzzzzz: 1 } ]\n"),
            ("apps.*.platforms", "apps: [ { id: a.example.com, platforms: { zzzzzzzzzzzz: 1 } } ]\n"),
            (
                "apps.*.platforms.*",
                "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b], zzzzzzzzzzzz: 1 } } } ]\n"
            ),
            (
                "apps.*.credentials",
                "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b] } }, credentials: { zzzzzzzzzzzz: 1 } } ]\n"
            ),
            (
                "apps.*.credentials.fcm",
                "apps: [ { id: a.example.com, platforms: { android: { appIds: [a.b] } }, credentials: { fcm: { zzzzzzzzzzzz: 1 } } } ]\n"
            ),
            (
                "apps.*.credentials.wns",
                "apps: [ { id: a.example.com, platforms: { windows: { appIds: [A.B_8wekyb3d8bbwe] } }, credentials: { wns: { zzzzzzzzzzzz: 1 } } } ]\n"
            ),
            (
                "apps.*.credentials.apns",
                "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b] } }, credentials: { apns: { zzzzzzzzzzzz: 1 } } } ]\n"
            ),
            ("transports", "transports: { zzzzzzzzzzzz: 1 }\n"),
            ("transports.apns", "transports: { apns: { zzzzzzzzzzzz: 1 } }\n"),
            ("transports.fcm", "transports: { fcm: { zzzzzzzzzzzz: 1 } }\n"),
            ("transports.wns", "transports: { wns: { zzzzzzzzzzzz: 1 } }\n"),
            (
                "apps.*.delivery",
                "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b] } }, delivery: { zzzzzzzzzzzz: 1 } } ]\n"
            ),
            (
                "apps.*.domain",
                "apps: [ { id: a.example.com, platforms: { ios: { appIds: [a.b] } }, domain: { zzzzzzzzzzzz: 1 } } ]\n"
            ),
        ])
    func schemaMatchesReader(path: String, yaml: String) throws {
        let message = try #require(
            load(yaml).errors.first { $0.message.contains("unknown key 'zzzzzzzzzzzz'") }?.message, "\(path)")
        let allowed = try #require(message.components(separatedBy: "allowed keys: ").last)
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let schema = try #require(
            EnvironmentOverrides.schema(plugins: firstPartyPlugins)[path], "\(path) missing from the schema")
        #expect(Set(allowed) == Set(schema), "\(path): the reader allows \(allowed), the schema lists \(schema)")
    }
}
