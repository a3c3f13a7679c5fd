import Foundation
import HubTesting
import NIOHTTP1
import Testing

/// A broadcast survives `kill -9` of the `hub serve` expanding it: restarted under its name, the
/// hub takes its unfinished chunk back and finishes the audience; every chunk counts once.
@Suite("hub serve: broadcasts survive kill -9")
struct BroadcastKillTests {
    @Test("killed mid-broadcast and restarted: the broadcast finishes, every user counted once")
    func resumesAfterKill() async throws {
        let first = try await ListeningProcess.served()
        let users = (0..<20_000).map { "user-\(100_000 + $0)" }
        let list = users.map { "\"\($0)\"" }.joined(separator: ",")
        let http = HubHTTP(base: first.baseURL)
        let created = try await http.request(
            .POST, "/v1/apps/notes.contoso.com/broadcasts", bearer: http.publisherKey,
            json: #"{"audience":{"users":[\#(list)]},"appNotificationId":"outage","payload":{"rawContent":"x"}}"#)
        #expect(created.status == 202, "\(created.body)")
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])?["id"] as? String)
        let path = "/v1/apps/notes.contoso.com/broadcasts/\(id)"
        func progress(_ http: HubHTTP) async -> [String: Any] {
            guard let body = try? await http.request(.GET, path, bearer: http.publisherKey).body else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
        #expect(await eventually { (await progress(http)["published"] as? Int ?? 0) >= 1_000 }, "under way")
        first.signal(SIGKILL)
        #expect(await first.waitForExit() == -SIGKILL)

        let second = try await ListeningProcess(directory: first.directory)
        defer { second.signal(SIGTERM) }
        let again = HubHTTP(base: second.baseURL)
        let atRestart = await progress(again)
        #expect((atRestart["published"] as? Int ?? 0) < users.count, "killed before the end: \(atRestart)")
        #expect(
            await eventually(timeout: .seconds(120)) { await progress(again)["status"] as? String == "done" },
            "finished after the restart")
        let done = await progress(again)
        #expect(done["published"] as? Int == users.count, "\(done)")
        #expect(done["failed"] as? Int == 0)
        for user in [users[0], users[users.count / 2], users[users.count - 1]] {
            let history = try await again.request(
                .GET, "/v1/apps/notes.contoso.com/users/\(user)/notifications", bearer: again.publisherKey)
            #expect(history.body.components(separatedBy: #""appNotificationId":"outage""#).count == 2, "\(user) once")
        }
    }
}
