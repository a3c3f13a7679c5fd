import Foundation
import HubCore
import HubUnifiedPush
import HubWebPush
import Testing

/// `hub emulate unifiedpush` as a developer runs it: the endpoint check it answers (as told), a
/// push through the transport without VAPID, decrypted in its output, SIGTERM to stop.
@Suite("hub emulate unifiedpush")
struct EmulateUnifiedPushTests {
    @Test("the endpoint check fails as told (--check-status 404); passes by default; a push is printed decrypted")
    func unifiedpush() async throws {
        let workspace = try makeWorkspace()
        let app = CrossDeviceApp(id: "notes.contoso.com", name: "Notes", platforms: [.android: ["com.contoso.notes"]])

        let failing = try await RunningEmulator(
            ["unifiedpush", "--directory", "up-failing", "--endpoints", "1", "--check-status", "404"], in: workspace,
            readyWhen: "Accepted pushes follow")
        let (failingTransport, failingEndpoint) = try Self.transport(banner: failing)
        let problem = await failingTransport.check(registering: failingEndpoint, for: app)
        #expect(problem?.contains("endpoint check failed: the GET answered 404") == true, "\(problem ?? "nil")")
        try await failingTransport.shutdown()
        failing.signal(SIGTERM)
        #expect(await failing.waitForExit() == 0, "\(failing.output)\n\(failing.errors)")

        let emulator = try await RunningEmulator(
            ["unifiedpush", "--directory", "up-passing", "--endpoints", "1"], in: workspace,
            readyWhen: "Accepted pushes follow")
        #expect(emulator.output.contains("VAPID            optional"))
        let (transport, endpoint) = try Self.transport(banner: emulator)
        #expect(await transport.check(registering: endpoint, for: app) == nil)
        let outcome = await transport.send(
            EmulateCommandTests.outbound(
                app: app, platform: .android, appID: "com.contoso.notes", transport: .unifiedpush,
                token: endpoint.token ?? ""))
        try await transport.shutdown()
        #expect(outcome == .accepted, "\(emulator.output)")
        #expect(try await emulator.waitFor(#"vapid -: {"app":"notes.contoso.com","hub":"tap","v":"1"}"#))
        emulator.signal(SIGTERM)
        #expect(await emulator.waitForExit() == 0, "\(emulator.output)\n\(emulator.errors)")
    }

    /// A transport that trusts the emulator of `banner`, and an endpoint with its first endpoint.
    static func transport(banner emulator: RunningEmulator) throws -> (UnifiedPushTransport, Endpoint) {
        let banner = emulator.output
        let caPath = try #require(emulator.value(after: "CA certificate   ", in: banner))
        let host = try #require(emulator.value(after: "on https://", in: banner))
        let token = try #require(
            banner.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(#"{"endpoint""#) }
        )
        .trimmingCharacters(in: .whitespaces)
        let transport = try UnifiedPushTransport(
            configuration: UnifiedPushConfiguration(
                webPush: WebPushConfiguration(
                    endpointPolicy: WebPushEndpointPolicy(allowedHosts: [host]),
                    trustRootsPEM: [try String(contentsOfFile: caPath, encoding: .utf8)])))
        let endpoint = Endpoint(
            id: "phone", appId: "notes.contoso.com", userId: "alice", platform: .android,
            platformAppId: "com.contoso.notes", transport: .unifiedpush, token: token, registeredAt: Date())
        return (transport, endpoint)
    }
}
