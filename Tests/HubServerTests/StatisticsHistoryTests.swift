import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubTesting
import HummingbirdTesting
import Testing

@Suite("Statistics over time, over HTTP")
struct StatisticsHistoryTests {
    static let base = "/v1/apps/\(Harness.notes)/statistics/history"

    /// Registers `alice`'s endpoints of the `recording` transport: accepted, retried, gone, rejected.
    static func registerEndpoints(_ client: any TestClientProtocol, harness: Harness) async throws {
        let alice = try await harness.token(user: "alice")
        for (id, token) in [("good", "tok-live"), ("flaky", "flaky-1"), ("gone", "dead"), ("bad", "rejected-1")] {
            try await client.registerRecording(id, token: token, bearer: alice)
        }
    }

    /// The `recording` transport's entry of a history answer.
    static func recording(_ response: TestResponse) -> [String: Any] {
        response.object.objects("transports").first { $0.string("transport") == "recording" } ?? [:]
    }

    /// Whether a history answer shows every outcome of one publish to the four endpoints (the
    /// gone endpoint's deactivation is written by the outcome recorder, apart from the counts).
    static func complete(_ response: TestResponse) -> Bool {
        let total = recording(response)["total"] as? [String: Any] ?? [:]
        let endpoints = recording(response)["endpoints"] as? [String: Int]
        return total["delivered"] as? Int == 1 && total["gone"] as? Int == 1 && endpoints?["inactive"] == 1
            && (total["retried"] as? Int ?? 0) >= 1 && (total["failed"] as? [String: Int])?.isEmpty == false
    }

    @Test("publish, deliver, retry, gone and rejected show in the history, and survive a restart on the same file")
    func historyAndRestart() async throws {
        let path = try TemporaryFolder.make("statistics").appendingPathComponent("hub.sqlite").path
        let harness = try await Harness(storePath: path, statisticsFlushInterval: .milliseconds(100))
        let retriedBefore = try await harness.run { client in
            try await Self.registerEndpoints(client, harness: harness)
            #expect(try await client.publish(notification("n1"), user: "alice").status == .created)

            // The outcomes reach the store at the next flush (every 100 ms here).
            var response = try await client.send(.get, Self.base, bearer: Harness.adminToken)
            _ = try await eventually {
                response = try await client.send(.get, Self.base, bearer: Harness.adminToken)
                return Self.complete(response)
            }
            #expect(Self.complete(response), "\(response.text)")
            #expect(response.status == .ok)
            #expect(response.object.string("resolution") == "minute")
            let appTotal = response.object["total"] as? [String: Any] ?? [:]
            #expect(appTotal["published"] as? Int == 1)
            let recording = Self.recording(response)
            let total = recording["total"] as? [String: Any] ?? [:]
            #expect(total["published"] == nil, "publishes belong to the app, not to a transport")
            #expect(total["failed"] as? [String: Int] == ["400 BadDeviceToken": 1])
            let latency = total["latencyMs"] as? [String: Any] ?? [:]
            #expect(latency["count"] as? Int == 1)
            let p50 = try #require(latency["p50"] as? Double)
            #expect(p50 >= 0 && p50 <= 5_000, "publish → acceptance in this process: \(p50) ms")
            #expect(recording["endpoints"] as? [String: Int] == ["active": 3, "inactive": 1])
            let buckets = recording.objects("buckets")
            #expect(buckets.count >= 1 && buckets.first?.string("start") != nil)
            #expect(response.object.objects("buckets").first?["published"] as? Int == 1)

            // A publisher key of the app reads it too; another app's key and no key do not.
            #expect(try await client.send(.get, Self.base, bearer: Harness.notesKey).status == .ok)
            #expect(try await client.send(.get, Self.base, bearer: Harness.tasksKey).status == .unauthorized)
            #expect(try await client.send(.get, Self.base).status == .unauthorized)
            let hours = try await client.send(.get, Self.base + "?resolution=hour", bearer: Harness.notesKey)
            #expect((hours.object["total"] as? [String: Any])?["published"] as? Int == 1)
            return total["retried"] as? Int ?? 0
        }

        // Another hub on the same file: the counts were written to the store, not kept in memory.
        let restarted = try await Harness(storePath: path)
        try await restarted.run { client in
            let response = try await client.send(
                .get, Self.base + "?resolution=hour", bearer: Harness.adminToken)
            #expect((response.object["total"] as? [String: Any])?["published"] as? Int == 1, "\(response.text)")
            let total = Self.recording(response)["total"] as? [String: Any] ?? [:]
            #expect(total["delivered"] as? Int == 1)
            #expect(total["gone"] as? Int == 1)
            #expect((total["retried"] as? Int ?? 0) >= retriedBefore)
            #expect(total["failed"] as? [String: Int] == ["400 BadDeviceToken": 1])
        }
    }

    @Test("bad parameters get a 400 naming the parameter")
    func badParameters() async throws {
        let harness = try await Harness()
        try await harness.run { client in
            func fields(_ query: String) async throws -> [String] {
                let response = try await client.send(.get, Self.base + query, bearer: Harness.adminToken)
                #expect(response.status == .badRequest, "\(query): \(response.text)")
                return response.errorFields
            }
            #expect(try await fields("?resolution=second") == ["resolution"])
            #expect(try await fields("?from=yesterday") == ["from"])
            #expect(try await fields("?to=2025-13-01T00:00:00Z") == ["to"])
            #expect(try await fields("?from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z") == ["from"])
            #expect(try await fields("?from=2025-01-01T00:00:00Z&to=2025-01-02T00:00:01Z") == ["from"])
            #expect(
                try await fields("?resolution=hour&from=2025-01-01T00:00:00Z&to=2025-02-01T00:00:00Z") == ["from"])
            let day = try await client.send(
                .get, Self.base + "?resolution=minute&from=2025-01-01T00:00:00Z&to=2025-01-02T00:00:00Z",
                bearer: Harness.adminToken)
            #expect(day.status == .ok, "24 hours of minutes is allowed")
            #expect(day.object.string("from") == "2025-01-01T00:00:00.000Z")
            let unknown = try await client.send(
                .get, "/v1/apps/unknown.example.com/statistics/history", bearer: Harness.adminToken)
            #expect(unknown.status == .notFound)
        }
    }
}
