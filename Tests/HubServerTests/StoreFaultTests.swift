import Foundation
import HubCore
import HubTesting
import Testing

@Suite("store faults over HTTP: readiness and publishes answer in bounded time")
struct StoreFaultTests {
    @Test("while the store hangs, /readyz answers 503 within a second, and 200 again once it answers")
    func readiness() async throws {
        let plug = StorePlug()
        let harness = try await Harness(plug: plug, storeTimeout: .seconds(3))
        try await harness.run(.live) { client in
            #expect(try await client.send(.get, "/readyz").status == .ok)
            plug.unplug(.hang)
            let started = ContinuousClock.now
            let response = try await client.send(.get, "/readyz")
            let elapsed = ContinuousClock.now - started
            #expect(response.status == .serviceUnavailable)
            #expect(response.problemType == "unavailable")
            #expect(elapsed < .milliseconds(1500), "answered after \(elapsed)")
            plug.plugIn()
            #expect(try await client.send(.get, "/readyz").status == .ok)
        }
    }

    @Test("while the store hangs, a publish answers 503 with Retry-After within the store timeout; none is lost")
    func publish() async throws {
        let plug = StorePlug()
        let harness = try await Harness(plug: plug, storeTimeout: .seconds(1))
        try await harness.run(.live) { client in
            #expect(try await client.publish(notification("before"), user: "alice").status == .created)
            plug.unplug(.hang)
            let started = ContinuousClock.now
            let refused = try await client.publish(notification("during"), user: "alice")
            let elapsed = ContinuousClock.now - started
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers[.retryAfter] != nil)
            #expect(elapsed < .seconds(3), "answered after \(elapsed)")
            plug.plugIn()
            // The refused publish may have committed late (outcome unknown): the retry is idempotent.
            let retried = try await client.publish(notification("during"), user: "alice")
            #expect([.created, .ok].contains(retried.status))
            let history = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/alice/notifications", bearer: Harness.notesKey)
            let ids = history.object.objects("notifications").compactMap { $0["appNotificationId"] as? String }
            #expect(Set(ids) == ["before", "during"], "\(history.text)")
        }
    }
}
