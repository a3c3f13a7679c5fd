import Foundation
import HubCore
import HubEmulators
import HubTesting
import HubUnifiedPush
import HubWebPush
import Testing

@Suite("UnifiedPush transport: TransportConformance against a distributor emulator", .serialized)
struct UnifiedPushConformanceTests {
    /// An app without a VAPID key: its pushes go without `Authorization`, as a distributor that
    /// was not given a key takes them.
    static let app = CrossDeviceApp(
        id: "notes.contoso.com", name: "Notes", platforms: [.android: ["com.contoso.notes"]])

    @Test("passes the transport conformance suite (no VAPID key)", arguments: TransportConformance.all)
    func conformance(_ check: TransportConformance.Check) async throws {
        let emulator = try await WebPushEmulator.start(distributor: true)
        let transport = try UnifiedPushTransport(
            configuration: UnifiedPushConfiguration(
                webPush: WebPushConfiguration(
                    endpointPolicy: WebPushEndpointPolicy(allowedHosts: [emulator.host]),
                    trustRootsPEM: [emulator.trustRootPEM])))
        let conformance = TransportConformanceHarness(
            app: Self.app, platform: .android, platformAppId: "com.contoso.notes", transport: .unifiedpush,
            workingToken: { emulator.makeSubscription().json },
            deadToken: {
                let subscription = emulator.makeSubscription()
                emulator.expire(subscription)
                return subscription.json
            },
            sendTimeLimit: .seconds(20))
        try await withShutdown([transport.shutdown, emulator.shutdown]) {
            try await check.run(transport, conformance)
        }
    }

    @Test("registration refuses an endpoint longer than the specification's 1,000 bytes")
    func endpointLength() async throws {
        let transport = try UnifiedPushTransport(
            configuration: UnifiedPushConfiguration(
                webPush: WebPushConfiguration(endpointPolicy: WebPushEndpointPolicy(allowedHosts: ["ntfy.example.com"]))
            ))
        let keys = WebPushEmulator.makeVAPIDKey().publicKey
        func endpoint(pathLength: Int) -> Endpoint {
            let url = "https://ntfy.example.com/" + String(repeating: "u", count: pathLength)
            return Endpoint(
                id: "phone", appId: Self.app.id, userId: "alice", platform: .android,
                platformAppId: "com.contoso.notes", transport: .unifiedpush,
                token: WebPushSubscription(endpoint: url, p256dh: keys, auth: Array(repeating: 1, count: 16)).json,
                registeredAt: Date())
        }
        let fits = 1000 - "https://ntfy.example.com/".utf8.count
        #expect(transport.problem(registering: endpoint(pathLength: fits), for: Self.app) == nil)
        let problem = transport.problem(registering: endpoint(pathLength: fits + 1), for: Self.app)
        #expect(problem?.contains("at most 1000") == true, "\(problem ?? "nil")")
        try await transport.shutdown()
    }

    @Test("a push without a VAPID key carries no Authorization; a 429 retries the endpoint after Retry-After")
    func withoutVAPID() async throws {
        let emulator = try await WebPushEmulator.start(distributor: true)
        let transport = try UnifiedPushTransport(
            configuration: UnifiedPushConfiguration(
                webPush: WebPushConfiguration(
                    endpointPolicy: WebPushEndpointPolicy(allowedHosts: [emulator.host]),
                    trustRootsPEM: [emulator.trustRootPEM])))
        try await withShutdown([transport.shutdown, emulator.shutdown]) {
            let subscription = emulator.makeSubscription()
            let endpoint = Endpoint(
                id: "phone", appId: Self.app.id, userId: "alice", platform: .android,
                platformAppId: "com.contoso.notes", transport: .unifiedpush, token: subscription.json,
                registeredAt: Date())
            emulator.failNextSends(1, status: 429, retryAfter: 7)
            let limited = await transport.send(.fixture(.shoulderTap, to: endpoint, app: Self.app))
            guard case .retry(let after, _) = limited else {
                Issue.record("429 gave \(limited)")
                return
            }
            #expect(after == .seconds(7))
            #expect(await transport.send(.fixture(.shoulderTap, to: endpoint, app: Self.app)) == .accepted)
            let message = try #require(emulator.received(by: subscription).first)
            #expect(message.subject.isEmpty && message.vapidKey.isEmpty, "no VAPID token was sent")
            #expect(message.text.contains(#""hub":"tap""#))
        }
    }
}
