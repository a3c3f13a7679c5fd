import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubTesting
import HummingbirdTesting
import Prometheus
import Testing

@Suite("Admin and operations routes")
struct AdminAndOperationsTests {
    @Test("admin routes need the admin token and never show secrets")
    func adminAuthenticationAndSecrets() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            #expect(try await client.send(.get, "/v1/apps").status == .unauthorized)
            #expect(try await client.send(.get, "/v1/apps", bearer: "admin-9c2d7e4f1c").status == .unauthorized)
            #expect(try await client.send(.get, "/v1/apps", bearer: Harness.notesKey).status == .unauthorized)

            let apps = try await client.send(.get, "/v1/apps", bearer: Harness.adminToken)
            #expect(apps.status == .ok)
            let listed = apps.object.objects("apps")
            #expect(listed.compactMap { $0.string("id") } == [Harness.notes, Harness.tasks])
            let notes = try #require(listed.first)
            #expect(notes.string("name") == "Contoso Notes")
            #expect(notes["publishers"] as? [String] == ["backend"])
            let platforms = notes.objects("platforms")
            #expect(platforms.compactMap { $0.string("platform") } == ["ios", "android", "web"])
            #expect(notes.objects("identity").first?.string("keys") == "jwksFile")
            for secret in [Harness.notesKey, Harness.tasksKey, Harness.tasksSecret, Harness.adminToken] {
                #expect(!apps.text.contains(secret))
            }
        }
    }

    @Test("without an admin token configured, admin routes are off")
    func adminDisabled() async throws {
        let harness = try await Harness(adminToken: nil)
        try await harness.run { client in
            let response = try await client.send(.get, "/v1/apps", bearer: "anything")
            #expect(response.status == .forbidden)
            #expect(response.problemType == "forbidden")
            #expect(response.object.string("detail")?.contains("server.adminToken") == true)
        }
    }

    @Test("the feedback list, a user's endpoints and the statistics")
    func feedbackListAndStatistics() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        try await harness.run { client in
            for (id, token) in [("good", "tok-live"), ("gone", "dead")] {
                try await client.registerRecording(id, token: token, bearer: alice)
            }
            _ = try await client.publish(notification("n1"), user: "alice")
            #expect(await eventually { harness.custom.deliveries(to: "gone").count == 1 })

            let base = "/v1/apps/\(Harness.notes)"
            #expect(
                await eventually {
                    (try? await harness.hub.appEndpoints(app: Harness.notes, state: .inactive).count) == 1
                })
            let feedback = try await client.send(.get, base + "/endpoints?state=inactive", bearer: Harness.adminToken)
            #expect(feedback.status == .ok)
            let inactive = feedback.object.objects("endpoints")
            #expect(inactive.compactMap { $0.string("id") } == ["gone"])
            #expect(inactive.first?.string("userId") == "alice")
            #expect(inactive.first?.string("inactiveReason") == "Unregistered")

            let all = try await client.send(.get, base + "/users/alice/endpoints", bearer: Harness.adminToken)
            #expect(Set(all.object.objects("endpoints").compactMap { $0.string("id") }) == ["good", "gone"])
            #expect(!all.text.contains("tok-live"))

            let badState = try await client.send(.get, base + "/endpoints?state=dead", bearer: Harness.adminToken)
            #expect(badState.errorFields == ["state"])

            let statistics = try await client.send(.get, base + "/statistics", bearer: Harness.adminToken)
            #expect(statistics.status == .ok)
            #expect(statistics.object["pending"] as? Int != nil)
            #expect(statistics.object.string("scope") == "hub")
            #expect(try await client.send(.get, base + "/statistics").status == .unauthorized)
        }
    }

    @Test("suspended deliveries show in the app's statistics and in hub_deliveries_suspended, over HTTP")
    func suspendedStatistics() async throws {
        let registry = PrometheusCollectorRegistry()
        let harness = try await Harness(metrics: registry)
        let alice = try await harness.token(user: "alice")
        try await harness.run(.live) { client in
            for (id, token) in [("phone", "misconfigured-1"), ("tablet", "misconfigured-2"), ("good", "tok-live")] {
                try await client.registerRecording(id, token: token, bearer: alice)
            }
            _ = try await client.publish(notification("n1"), user: "alice")
            #expect(
                await eventually {
                    (try? await harness.hub.deliveryStatistics().suspended.first?.count) == 2
                        && harness.custom.deliveries(to: "good").count == 1
                })
            let statistics = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/statistics", bearer: Harness.adminToken)
            #expect(statistics.status == .ok)
            let suspended = statistics.object.objects("suspended")
            #expect(suspended.count == 1, "\(statistics.text)")
            #expect(suspended.first?.string("transport") == "recording")
            #expect(suspended.first?["count"] as? Int == 2)
            #expect(suspended.first?.string("lastReason") == Harness.suspendedReason)
            #expect(suspended.first?.string("lastSuspendedDateTime") != nil)
            #expect(statistics.object["pending"] as? Int == 2, "parked deliveries stay pending")
            let finished = statistics.object["finished"] as? [String: Any]
            #expect((finished?["recording"] as? [String: Any])?["rejected"] == nil, "nothing was dropped")

            let other = try await client.send(.get, "/v1/apps/\(Harness.tasks)/statistics", bearer: Harness.adminToken)
            #expect(other.object.objects("suspended").isEmpty, "another app's statistics show none of them")

            let metrics = try await client.send(.get, "/metrics")
            #expect(
                metrics.text.contains(
                    "# HELP hub_deliveries_suspended Deliveries parked for a configuration fault"))
            #expect(
                metrics.text.contains(#"hub_deliveries_suspended{app="notes.contoso.com",transport="recording"} 2"#))
            #expect(
                metrics.text.contains(#"hub_deliveries_suspended{app="tasks.fabrikam.com",transport="recording"} 0"#))
        }
    }

    @Test("a /metrics scrape reads the outbox depth, never the whole delivery history")
    func metricsReadOutboxDepthOnly() async throws {
        let plug = StorePlug()
        let harness = try await Harness(metrics: PrometheusCollectorRegistry(), plug: plug)
        try await harness.run(.live) { client in
            _ = try await client.publish(notification("n1"), user: "alice")
            let metrics = try await client.send(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.text.contains("hub_deliveries_suspended"))
            #expect(plug.calls("outboxDepth") == 1)
            #expect(plug.calls("deliveryStatistics") == 0, "a scrape must not count every finished delivery")
        }
    }

    @Test("healthz, readyz, metrics and the OpenAPI document")
    func operations() async throws {
        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(
            descriptor: MetricNameDescriptor(metricName: "hub_test_marker", unitName: "total", helpText: "A marker.")
        ).increment()
        let harness = try await Harness(metrics: registry)
        try await harness.run { client in
            let health = try await client.send(.get, "/healthz")
            #expect(health.status == .ok)
            #expect(health.object.string("status") == "ok")
            #expect(try await client.send(.get, "/readyz").status == .ok)

            let metrics = try await client.send(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            #expect(metrics.text.contains("hub_test_marker_total 1"))

            let document = try await client.send(.get, "/openapi.yaml")
            #expect(document.status == .ok)
            #expect(document.headers[.contentType]?.hasPrefix("application/yaml") == true)
            #expect(document.text.hasPrefix("openapi: 3.1.0"))
            let paths = [
                "/v1/apps/{app}/users/{userId}/notifications:", "/v1/apps/{app}/users/{userId}/notifications/{id}:",
                "/beta/me/notifications:", "/v1/apps/{app}/me/endpoints:", "/v1/apps/{app}/me/endpoints/{endpointId}:",
                "/v1/apps/{app}/me/feed:", "/v1/apps/{app}/me/notifications:", "/v1/apps/{app}/me/notifications/{id}:",
                "/v1/apps/{app}/me/subscription:", "/v1/apps:", "/v1/apps/{app}/endpoints:",
                "/v1/apps/{app}/users/{userId}/endpoints:", "/v1/apps/{app}/statistics:", "/healthz:", "/readyz:",
                "/metrics:", "/openapi.yaml:",
            ]
            for path in paths { #expect(document.text.contains("\n  \(path)\n"), "\(path)") }
        }
    }

    @Test("without a registry, /metrics is a 404")
    func metricsDisabled() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            let response = try await client.send(.get, "/metrics")
            #expect(response.status == .notFound)
            #expect(response.problemType == "not-found")
        }
    }
}
