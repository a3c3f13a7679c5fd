import Foundation
import HubCore
import HubWebPush
import Testing

/// `hub emulate webpush` as a developer runs it: subscriptions and a VAPID key from its banner, a
/// message through the transport, decrypted in its output, SIGTERM to stop.
@Suite("hub emulate webpush")
struct EmulateWebPushTests {
    @Test("a tap with the printed VAPID key, subscription and CA is accepted and printed decrypted; SIGTERM exits 0")
    func webpush() async throws {
        let workspace = try makeWorkspace()
        let emulator = try await RunningEmulator(
            ["webpush", "--port", "0", "--directory", "webpush", "--subscriptions", "1"], in: workspace,
            readyWhen: "Accepted messages follow")
        let banner = emulator.output
        let keyPath = try #require(emulator.value(after: "VAPID key        ", in: banner))
        let caPath = try #require(emulator.value(after: "CA certificate   ", in: banner))
        let host = try #require(emulator.value(after: "on https://", in: banner))
        let subscription = try #require(
            banner.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(#"{"endpoint""#) }
        )
        .trimmingCharacters(in: .whitespaces)
        let keyText = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(
            try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int == 0o600)
        #expect(!banner.contains(keyText), "the banner must name the key file, not print the key")

        let appID = "notes.contoso.com"
        let transport = try WebPushTransport(
            configuration: WebPushConfiguration(
                endpointPolicy: WebPushEndpointPolicy(allowedHosts: [host]),
                trustRootsPEM: [try String(contentsOfFile: caPath, encoding: .utf8)]))
        let vapid = try VAPIDCredentials(privateKey: Secret(keyText), subject: "mailto:dev@contoso.com")
        let app = CrossDeviceApp(
            id: appID, name: "Notes", platforms: [.web: ["https://notes.contoso.com"]],
            credentials: PushCredentials([WebPushCredentials(vapid: vapid)]))
        let outcome = await transport.send(
            EmulateCommandTests.outbound(
                app: app, platform: .web, appID: "https://notes.contoso.com", transport: .webpush, token: subscription))
        try await transport.shutdown()
        #expect(outcome == .accepted, "\(emulator.output)")
        #expect(
            try await emulator.waitFor(#"sub mailto:dev@contoso.com: {"app":"notes.contoso.com","hub":"tap","v":"1"}"#))

        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }
}
