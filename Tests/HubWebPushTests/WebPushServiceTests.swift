import Foundation
import HubCore
import HubEmulators
import Logging
import ServiceLifecycle
import Testing

@testable import HubWebPush

/// A transport is a `Service`: `hub serve` runs it in its `ServiceGroup` and it closes its
/// connections at graceful shutdown (after the hub has drained).
@Suite("Web Push transport as a service")
struct WebPushServiceTests {
    @Test("it sends while it runs, returns at graceful shutdown, and sends nothing after")
    func lifecycle() async throws {
        try await WebPushFixture.with { fixture in
            let group = ServiceGroup(services: [fixture.transport], logger: Logger(label: "webpush-service-test"))
            let running = Task { try await group.run() }
            #expect(await fixture.transport.send(fixture.outbound(fixture.subscription())) == .accepted)
            await group.triggerGracefulShutdown()
            try await running.value  // run() returned: the group ended without an error
            let after = await fixture.transport.send(fixture.outbound(fixture.subscription()))
            #expect(after.retryDelay != nil, "a send after the shutdown must be a retry: the connections are closed")
            #expect(fixture.emulator.received.count == 1)
        }
    }
}
