import Foundation
import HubCore
import Testing

@testable import HubAPNS
@testable import HubEmulators

private let bundle = "com.contoso.notes"

@Suite("APNs emulator: it refuses what Apple refuses, with Apple's status and reason")
struct APNSEmulatorTests {
    static let token = String(repeating: "ab", count: 32)

    /// A started emulator, its key, a signed token and a clock both share.
    struct Fixture {
        let emulator: APNSEmulator
        let key: APNSTestKey
        let clock: ManualClock
        let authorization: String

        static func make() async throws -> Fixture {
            let clock = ManualClock()
            var configuration = APNSEmulator.Configuration()
            configuration.now = { clock.now }
            let emulator = try await APNSEmulator.start(configuration)
            let key = APNSTestKey()
            emulator.register(key, bundleIDs: [bundle])
            return Fixture(
                emulator: emulator, key: key, clock: clock, authorization: try await sign(key, clock: clock))
        }

        static func sign(_ key: APNSTestKey, clock: ManualClock, offsetMinutes: Double = 0) async throws -> String {
            let provider = try APNSTokenProvider(
                keyID: key.keyID, teamID: key.teamID, privateKeyPEM: key.privateKeyPEM,
                refreshInterval: .seconds(3000), now: { clock.now.addingTimeInterval(offsetMinutes * 60) })
            return try await provider.token().authorization
        }

        /// Judges one request on `connection` (a fresh one by default).
        func judge(
            _ change: (inout [String: String]) -> Void = { _ in }, body: String = #"{"aps":{"content-available":1}}"#,
            connection: APNSEmulatorConnection = APNSEmulatorConnection(id: 1, channel: nil),
            extra: [(String, String)] = []
        ) -> String {
            let verdict = self.verdict(change, body: body, connection: connection, extra: extra)
            return verdict.reason.map { "\(verdict.status) \($0)" } ?? "\(verdict.status)"
        }

        /// ``judge(_:body:connection:extra:)``'s whole verdict.
        func verdict(
            _ change: (inout [String: String]) -> Void = { _ in }, body: String = #"{"aps":{"content-available":1}}"#,
            connection: APNSEmulatorConnection = APNSEmulatorConnection(id: 1, channel: nil),
            extra: [(String, String)] = []
        ) -> APNSEmulatorVerdict {
            var headers = [
                ":method": "POST", ":path": "/3/device/\(APNSEmulatorTests.token)", ":scheme": "https",
                ":authority": "127.0.0.1", "apns-push-type": "background", "apns-topic": bundle,
                "apns-priority": "5", "authorization": authorization,
            ]
            change(&headers)
            let fields = headers.map { (name: $0.key, value: $0.value) } + extra.map { (name: $0.0, value: $0.1) }
            return emulator.evaluate(
                APNSEmulatorIncoming(fields: fields, body: Array(body.utf8), certificateBundleIDs: []),
                on: connection)
        }
    }

    @Test("headers: method, path, token, duplicates, apns-id, push type, priority, expiration, collapse ID")
    func headers() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        #expect(fixture.judge() == "200")
        #expect(fixture.judge { $0[":method"] = "GET" } == "405 MethodNotAllowed")
        #expect(fixture.judge { $0[":path"] = "/2/device/ab" } == "404 BadPath")
        #expect(fixture.judge { $0[":path"] = "/3/device/" } == "400 MissingDeviceToken")
        #expect(fixture.judge { $0[":path"] = "/3/device/xyz0" } == "400 BadDeviceToken")
        #expect(fixture.judge { $0[":path"] = "/3/device/abcdef" } == "200", "any length of whole hex bytes")
        #expect(fixture.judge(extra: [("apns-priority", "5")]) == "400 DuplicateHeaders")
        #expect(fixture.judge { $0["apns-id"] = "NOT-A-UUID" } == "400 BadMessageId")
        #expect(fixture.judge { $0["apns-id"] = UUID().uuidString } == "400 BadMessageId", "upper case")
        #expect(fixture.judge { $0["apns-id"] = UUID().uuidString.lowercased() } == "200")
        #expect(fixture.judge { $0["apns-push-type"] = nil } == "400 InvalidPushType")
        #expect(fixture.judge { $0["apns-push-type"] = "silent" } == "400 InvalidPushType")
        #expect(fixture.judge { $0["apns-priority"] = "7" } == "400 BadPriority")
        #expect(fixture.judge { $0["apns-priority"] = "10" } == "400 BadPriority", "background must be 5")
        #expect(fixture.judge { $0["apns-priority"] = nil } == "400 BadPriority", "the default 10 counts")
        #expect(fixture.judge { $0["apns-expiration"] = "soon" } == "400 BadExpirationDate")
        let milliseconds = String(Int64(fixture.clock.now.timeIntervalSince1970 * 1000))
        #expect(fixture.judge { $0["apns-expiration"] = milliseconds } == "400 BadExpirationDate")
        #expect(fixture.judge { $0["apns-expiration"] = "0" } == "200")
        #expect(fixture.judge { $0["apns-collapse-id"] = String(repeating: "c", count: 65) } == "400 BadCollapseId")
    }

    @Test("provider tokens: missing, malformed, unknown key, bad signature, expired, pinned, too many updates")
    func tokens() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        #expect(fixture.judge { $0["authorization"] = nil } == "403 MissingProviderToken")
        #expect(fixture.judge { $0["authorization"] = "basic abc" } == "403 InvalidProviderToken")
        #expect(fixture.judge { $0["authorization"] = "bearer a.b.c" } == "403 InvalidProviderToken")
        let forged = try await Fixture.sign(
            APNSTestKey(keyID: fixture.key.keyID, teamID: fixture.key.teamID), clock: fixture.clock)
        #expect(fixture.judge { $0["authorization"] = forged } == "403 InvalidProviderToken", "another key's signature")
        let unknown = try await Fixture.sign(APNSTestKey(keyID: "UNKNOWN001"), clock: fixture.clock)
        #expect(fixture.judge { $0["authorization"] = unknown } == "403 InvalidProviderToken")
        let old = try await Fixture.sign(fixture.key, clock: fixture.clock, offsetMinutes: -61)
        #expect(fixture.judge { $0["authorization"] = old } == "403 ExpiredProviderToken")
        let future = try await Fixture.sign(fixture.key, clock: fixture.clock, offsetMinutes: 10)
        #expect(fixture.judge { $0["authorization"] = future } == "403 InvalidProviderToken")

        let connection = APNSEmulatorConnection(id: 9, channel: nil)
        #expect(fixture.judge(connection: connection) == "200")
        let newer = try await Fixture.sign(fixture.key, clock: fixture.clock, offsetMinutes: -1)
        #expect(
            fixture.judge({ $0["authorization"] = newer }, connection: connection) == "429 TooManyProviderTokenUpdates")
        let otherKey = APNSTestKey(keyID: "OTHERKEY01", teamID: fixture.key.teamID)
        fixture.emulator.register(otherKey, bundleIDs: [bundle])
        let related = try await Fixture.sign(otherKey, clock: fixture.clock)
        #expect(fixture.judge({ $0["authorization"] = related }, connection: connection) == "403 UnrelatedKeyIdInToken")
        let otherTeam = APNSTestKey(keyID: "TEAMKEY002", teamID: "OTHERTEAM1")
        fixture.emulator.register(otherTeam, bundleIDs: [bundle])
        let foreign = try await Fixture.sign(otherTeam, clock: fixture.clock)
        #expect(fixture.judge({ $0["authorization"] = foreign }, connection: connection) == "403 InvalidProviderToken")
        fixture.clock.advance(minutes: 21)
        let later = try await Fixture.sign(fixture.key, clock: fixture.clock)
        #expect(fixture.judge({ $0["authorization"] = later }, connection: connection) == "200")

        let sandboxKey = APNSTestKey(keyID: "SANDBOX001", teamID: "SANDTEAM01")
        fixture.emulator.register(sandboxKey, bundleIDs: [bundle], environment: .development)
        let sandbox = try await Fixture.sign(sandboxKey, clock: fixture.clock)
        #expect(fixture.judge { $0["authorization"] = sandbox } == "403 BadEnvironmentKeyIdInToken")
    }

    @Test("topics: missing, malformed, wrong suffix for the push type, not the team's")
    func topics() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        #expect(fixture.judge { $0["apns-topic"] = nil } == "400 MissingTopic")
        #expect(fixture.judge { $0["apns-topic"] = "not a topic" } == "400 BadTopic")
        #expect(fixture.judge { $0["apns-topic"] = bundle + ".voip" } == "400 BadTopic")
        #expect(fixture.judge { $0["apns-topic"] = "com.other.app" } == "400 TopicDisallowed")
        let voip = fixture.judge(
            {
                $0["apns-push-type"] = "voip"
                $0["apns-priority"] = "10"
                $0["apns-topic"] = bundle + ".voip"
            }, body: #"{"call":1}"#)
        #expect(voip == "200")
        let widgets = fixture.judge({
            $0["apns-push-type"] = "widgets"
            $0["apns-topic"] = bundle
        })
        #expect(widgets == "400 BadTopic")
    }

    @Test("devices: unregistered with timestamp, other environment, other app")
    func devices() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        fixture.emulator.registerDevice(token: Self.token, bundleID: bundle, environment: .development)
        #expect(fixture.judge() == "400 BadDeviceToken")
        fixture.emulator.registerDevice(token: Self.token, bundleID: "com.other.app", environment: .production)
        #expect(fixture.judge() == "400 DeviceTokenNotForTopic")
        fixture.emulator.markUnregistered(token: Self.token, at: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(fixture.judge() == "410 Unregistered")
        let record = try #require(fixture.emulator.requests.last)
        #expect(record.status == 410 && record.reason == "Unregistered")
    }

    @Test(
        "a token unregistered from its first send reports that send's time (after the hub registered it), not the time it was marked"
    )
    func unregisteredFromFirstSend() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        fixture.emulator.markUnregisteredFromFirstSend(token: Self.token)
        // The device registers with the hub a while after the emulator started.
        fixture.clock.advance(minutes: 5)
        let first = fixture.verdict()
        #expect(first.status == 410 && first.reason == "Unregistered")
        #expect(first.timestamp == fixture.clock.now)
        fixture.clock.advance(minutes: 5)
        let later = fixture.verdict()
        #expect(later.status == 410)
        #expect(later.timestamp == first.timestamp, "the app was uninstalled once")
    }

    @Test("bodies: empty, too large, not JSON, background carrying an alert, alert showing nothing, wrong types")
    func bodies() async throws {
        let fixture = try await Fixture.make()
        defer { Task { await fixture.emulator.shutdown() } }
        func alert(_ body: String) -> String {
            fixture.judge(
                {
                    $0["apns-push-type"] = "alert"
                    $0["apns-priority"] = "10"
                }, body: body)
        }
        #expect(fixture.judge(body: "") == "400 PayloadEmpty")
        #expect(fixture.judge(body: "{\"x\":\"" + String(repeating: "y", count: 4100) + "\"}") == "413 PayloadTooLarge")
        #expect(fixture.judge(body: "[1]") == "400 BadPayload")
        #expect(fixture.judge(body: #"{"aps":{"content-available":true}}"#) == "400 BadPayload")
        #expect(fixture.judge(body: #"{"aps":{"content-available":1,"badge":1}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":{"title":"t"},"sound":"default","badge":2}}"#) == "200")
        #expect(alert(#"{"aps":{"category":"c"}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":{"title":1}}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":"t","badge":-1}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":"t","sound":{"critical":1,"name":"a","volume":2}}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":"t","interruption-level":"loud"}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":"t","relevance-score":3}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":{"title":"t","loc-args":["a",1]}}}"#) == "400 BadPayload")
        #expect(alert(#"{"aps":{"alert":{"title":"t","action-loc-key":"OPEN"}}}"#) == "200", "tolerated legacy key")
    }

    @Test("JSON: the emulator's parser reads bodies exactly as JSONDecoder does, leniencies and all")
    func jsonParser() throws {
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let texts = [
            #"{"aps":{"content-available":1},"hub":{"app":"a.b","v":7}}"#, "1.0", "1e2", "1E+2", "100e-2", "-0", "-0.0",
            "1.5", "1e-2", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "12345678901234567890.0", "1e400", "01", "1.", ".5", "-", "NaN", "true", "false", "null", "nul",
            #"{"a":1,"a":2}"#, #"{"\u0061":1,"a":2}"#, "[1,]", #"{"a":1,}"#, "[1,,]", "[,]", "{,}", "{}", "[]",
            #"" \ud83d\ude00 \u00e9 \n \/ ""#, #""\ud800""#, #""\udc00x""#, #""\x""#, "\"a\u{01}b\"", "\"\u{7F}é\"",
            #""\u0000""#, " 1 ", "1 x", "\u{FEFF}{}", "{} \n", #"{"a" : [ 1 , { "b" : null } ] }"#, #"{"a" 1}"#,
            #"{1:2}"#, "[1 2]", "", " ", deep, tooDeep,
        ]
        for text in texts {
            let expected = try? JSONDecoder().decode(APNSEmulator.JSON.self, from: Data(text.utf8))
            #expect(APNSEmulator.JSON.parse(Array(text.utf8)) == expected, "\(text.prefix(40))")
        }
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x7B, 0x22, 0xE2, 0x82, 0x22, 0x3A, 0x31, 0x7D],
        ] {
            #expect(APNSEmulator.JSON.parse(bytes) == nil)
        }
    }
}
