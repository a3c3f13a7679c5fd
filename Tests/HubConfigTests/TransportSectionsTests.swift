import Foundation
import HubAPNS
import HubCore
import HubFCM
import HubTesting
import Testing

@testable import HubConfig

/// `transports.<id>` and `credentials.<id>` are read by the plugins of the build; what they find is
/// reported at its file:line:column like every other key.
@Suite("hub.yaml: the transport plugins' sections")
struct TransportSectionsTests {
    @Test("each plugin reads transports.<id>; sections it does not have keep the defaults")
    func settings() throws {
        let text = """
            transports:
              apns: { server: "127.0.0.1:2197", trustRoots: ca.pem, timeout: 5s, maxConnections: 2 }
              fcm: { sendUrl: "https://127.0.0.1:4443/" }
            """
        let directory = try TemporaryFolder.make("transports")
        try "-----BEGIN CERTIFICATE-----\n".write(
            to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        let file = try ConfigLoader(environment: [:], plugins: firstPartyPlugins)
            .load(text: text, path: "hub.yaml", baseDirectory: directory.path).get()
        let apns = try #require(file.transports[.apns] as? APNSTransport.Configuration)
        #expect(apns.production == .init(host: "127.0.0.1", port: 2197))
        #expect(apns.trustRoots == .pemFile(directory.appendingPathComponent("ca.pem").path))
        #expect(apns.requestTimeout == .seconds(5) && apns.maxConnections == 2)
        let fcm = try #require(file.transports[.fcm] as? FCMConfiguration)
        #expect(fcm.sendBaseURL == "https://127.0.0.1:4443", "without the trailing slash")
        #expect(file.transports[.wns] != nil, "the defaults of a plugin without a section")
        #expect(file.transports[.polling] is NoSettings)
    }

    @Test("every problem of a plugin's section is reported at its position, with what to do")
    func diagnostics() {
        let text = """
            transports:
              apns: { server: nowhere, timout: 5s }
              webhook: { url: "https://example.com" }
              polling: { interval: 5s }
            apps:
              - id: notes.contoso.com
                platforms: { android: { appIds: [com.contoso.notes] } }
                credentials:
                  apns: { teamId: ABCDE12345, keyId: SHORT, privateKey: file:AuthKey_TEST123456.p8 }
                  webpush: { subject: "mailto:ops@contoso.com" }
            """
        let lines = errorLines(load(text))
        #expect(
            lines.contains(
                "hub.yaml:2:19: error: 'transports.apns.server' must be host:port, such as 127.0.0.1:2197"), "\(lines)")
        #expect(
            lines.contains("hub.yaml:2:28: error: unknown key 'timout' in 'transports.apns'; did you mean 'timeout'?"),
            "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("hub.yaml:3:3: error: unknown key 'webhook' in 'transports'") }, "\(lines)")
        #expect(
            lines.contains("hub.yaml:4:14: error: unknown key 'interval' in 'transports.polling'; it takes no keys"),
            "\(lines)")
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "hub.yaml:9:7: error: 'apps[0].credentials.apns' is given but the app does not select the ios platform"
                )
            }, "\(lines)")
        #expect(
            lines.contains(
                "hub.yaml:9:42: error: 'apps[0].credentials.apns.keyId' must be 10 letters or digits, not 'SHORT'"),
            "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("hub.yaml:10:7: error: unknown key 'webpush' in 'apps[0].credentials'") },
            "\(lines)")
    }

    @Test("a build without a plugin refuses its sections: keys name the plugins of the build")
    func unknownPlugin() {
        let result = ConfigLoader(environment: [:], plugins: [])
            .load(text: "transports: { apns: { timeout: 5s } }\n", path: "hub.yaml", baseDirectory: fixtures)
        #expect(errorLines(result) == ["hub.yaml:1:15: error: unknown key 'apns' in 'transports'; it takes no keys"])
    }
}
