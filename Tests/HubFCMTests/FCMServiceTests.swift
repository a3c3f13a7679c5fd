import Foundation
import HubCore
import HubEmulators
import Logging
import ServiceLifecycle
import Testing

@testable import HubFCM

/// A transport is a `Service`: `hub serve` runs it in its `ServiceGroup` and it closes its
/// connections at graceful shutdown (after the hub has drained).
@Suite("FCM transport as a service")
struct FCMServiceTests {
    @Test("it sends while it runs, returns at graceful shutdown, and sends nothing after")
    func lifecycle() async throws {
        let emulator = try await FCMEmulator.start()
        try await emulator.register(.primary)
        let transport = try FCMTransport(
            configuration: FCMConfiguration(sendBaseURL: emulator.baseURL, trustRootsPEM: [emulator.trustRootPEM]))
        let credentials = FCMTestServiceAccount.primary.credentials(tokenURI: emulator.tokenURI)
        let app = CrossDeviceApp(
            id: FCMFixture.appID, name: "Notes", platforms: [.android: [FCMFixture.package]],
            credentials: PushCredentials([credentials]))
        let fixture = FCMFixture(emulator: emulator, transport: transport, credentials: credentials, app: app)
        let group = ServiceGroup(services: [transport], logger: Logger(label: "fcm-service-test"))
        let running = Task { try await group.run() }

        #expect(await transport.send(fixture.outbound()) == .accepted)
        await group.triggerGracefulShutdown()
        try await running.value  // run() returned: the group ended without an error
        guard case .retry = await transport.send(fixture.outbound(token: "device-token-2")) else {
            Issue.record("a send after the shutdown must be a retry: the connections are closed")
            return
        }
        #expect(emulator.messages.count == 1)
        try await emulator.shutdown()
    }
}
