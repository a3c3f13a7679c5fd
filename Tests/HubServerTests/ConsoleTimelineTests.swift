import Foundation
import HTTPTypes
import HubCore
import HubTesting
import HummingbirdTesting
import Testing

@testable import HubServer

/// The console's delivery timeline and statistics charts, signed in, through HTTP.
@Suite("Console: delivery timeline and statistics")
struct ConsoleTimelineTests {
    static let hostileUser = "<script>alert(\"u\")</script>"

    /// Registers `user`'s devices of the `recording` transport: accepted, retried once, gone.
    static func registerDevices(_ client: any TestClientProtocol, harness: Harness, user: String) async throws {
        let token = try await harness.token(user: user)
        for (id, pushToken) in [("good", "tok-live"), ("flaky", "flaky"), ("gone", "dead")] {
            try await client.registerRecording(id, token: pushToken, bearer: token)
        }
    }

    @Test("the timeline: every device's deliveries with states, reasons and provider message IDs; values escaped")
    func timeline() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            try await Self.registerDevices(client, harness: harness, user: Self.hostileUser)
            let user = HTTPText.pathSegment(Self.hostileUser)
            let published = try await client.publish(notification("t1"), user: user)
            #expect(published.status == .created)
            let path =
                "/console/apps/\(Harness.notes)/deliveries?user=\(HTTPText.queryValue(Self.hostileUser))&id=t1"
            var page = try await client.send(.get, path, headers: [.cookie: cookie])
            let settled = await eventually {
                guard let next = try? await client.send(.get, path, headers: [.cookie: cookie]) else { return false }
                return next.text.contains("<strong>flaky (android, recording)</strong>: tap accepted by the provider")
                    && next.text.contains("tap gone: Unregistered")
            }
            page = try await client.send(.get, path, headers: [.cookie: cookie])
            #expect(settled, "\(page.text)")
            #expect(page.status == .ok)
            for expected in [
                "<h1>Delivery timeline</h1>", #"aria-current="page">Deliveries</a>"#, "tap accepted by the provider",
                "recording-", "tap gone: Unregistered",
                "tap sent again, attempt 2 after a retry (503 ServiceUnavailable)",
                #"<th scope="row"><span class="id" title="flaky">flaky</span></th>"#,
                "(inactive)", "&lt;script&gt;alert(&quot;u&quot;)&lt;/script&gt;",
            ] {
                #expect(page.text.contains(expected), "\(expected)")
            }
            #expect(!page.text.contains(Self.hostileUser), "the user ID arrives as text")
            #expect(!page.text.contains("tok-live"), "no push token")

            let form = try await client.send(
                .get, "/console/apps/\(Harness.notes)/deliveries", headers: [.cookie: cookie])
            #expect(form.text.contains(#"<label for="user">User ID</label>"#))
            let missing = try await client.send(
                .get, "/console/apps/\(Harness.notes)/deliveries?user=alice&id=nope", headers: [.cookie: cookie])
            #expect(missing.status == .notFound)
            let signedOut = try await client.send(.get, path)
            #expect(signedOut.status == .seeOther)
            #expect(!signedOut.text.contains("recording-"))
        }
    }

    @Test("the statistics page draws SVG charts and per-transport numbers from the store")
    func statistics() async throws {
        let harness = try await Harness(statisticsFlushInterval: .milliseconds(100))
        try await harness.run { client in
            let cookie = try await ConsoleAuthTests.session(client)
            try await Self.registerDevices(client, harness: harness, user: "alice")
            #expect(try await client.publish(notification("s1"), user: "alice").status == .created)
            let path = "/console/apps/\(Harness.notes)/statistics"
            let settled = await eventually {
                guard let page = try? await client.send(.get, path, headers: [.cookie: cookie]) else { return false }
                // recording: delivered 2 (good, flaky on its second attempt), retried 1, gone 1.
                return page.text.contains(#"<th scope="row">recording</th><td>2</td><td>1</td><td>1</td>"#)
            }
            let page = try await client.send(.get, path, headers: [.cookie: cookie])
            #expect(settled, "\(page.text)")
            for expected in [
                #"role="img""#, "Publishes and deliveries per minute", "Publish → provider latency (ms)",
                "<polyline", #"aria-current="page">Last hour</a>"#, "published in the range: 1",
                #"aria-current="page">Statistics</a>"#,
            ] {
                #expect(page.text.contains(expected), "\(expected)")
            }
            #expect(!page.text.contains("style="), "no inline style (the CSP refuses it)")
            let month = try await client.send(.get, path + "?range=30d", headers: [.cookie: cookie])
            #expect(month.status == .ok)
            #expect(month.text.contains("Publishes and deliveries per hour"))
        }
    }
}
