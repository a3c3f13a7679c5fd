import Foundation
import HubTesting
import NIOHTTP1
import Testing

/// hub.yaml's `broadcasts:` section, as `hub config check` reports it and `hub serve` runs it.
@Suite("hub.yaml broadcasts: section, checked and served")
struct BroadcastSettingsServeTests {
    static let section = "broadcasts: { chunkSize: 10, maxUsersPerSecond: 2, concurrentChunks: 1, lease: 2m }"

    @Test("hub config check prints the section as the expander runs it")
    func checkSummary() async throws {
        let workspace = try makeWorkspace()
        try writeServeConfig(in: workspace, extra: Self.section)
        let output = try await HubProcess.run(["config", "check"], in: workspace)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(
            output.stdout.contains("broadcasts: chunks of 10 users, 1 at a time, lease 120s, at most 2 users/s"),
            "\(output.stdout)")
    }

    @Test("hub serve expands in the section's chunks at its pace: 10 users, then 5 s later the next 10")
    func servedChunksAndPace() async throws {
        let hub = try await ListeningProcess.served(extra: Self.section)
        defer { hub.signal(SIGTERM) }
        let http = HubHTTP(base: hub.baseURL)
        let users = (0..<20).map { "\"user-\(100 + $0)\"" }.joined(separator: ",")
        let created = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/broadcasts", bearer: http.publisherKey,
            json: #"{"audience":{"users":[\#(users)]},"appNotificationId":"paced","payload":{"rawContent":"x"}}"#)
        #expect(created.status == 202, "\(created.body)")
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])?["id"] as? String)
        func published() async -> Int {
            let path = "/v1/apps/notes.contoso.com/broadcasts/\(id)"
            guard let body = try? await http.request(.GET, path, bearer: http.publisherKey).body,
                let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            else { return -1 }
            return object["published"] as? Int ?? -1
        }
        // The default chunk (500) would publish all 20 at once; 2 users/s holds the second chunk
        // of 10 back for 5 s after the first.
        #expect(await eventually { await published() >= 10 })
        let firstChunk = ContinuousClock.now
        #expect(await published() == 10, "one chunk of 10, then a pause")
        #expect(await eventually(timeout: .seconds(60)) { await published() == 20 })
        let pause = ContinuousClock.now - firstChunk
        #expect(pause >= .seconds(4), "the second chunk waited its turn: \(pause)")
    }
}
