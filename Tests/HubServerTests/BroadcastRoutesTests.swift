import Foundation
import HTTPTypes
import HubTesting
import HummingbirdTesting
import Testing

@testable import HubCore

/// User tags and broadcasts over real HTTP connections (`.live`), on SQLite: audiences reach
/// each user once, progress, cancellation, and a chunk of a killed instance taken over.
@Suite("Broadcasts")
struct BroadcastRoutesTests {
    static let notes = "/v1/apps/\(Harness.notes)"

    static func putTags(_ user: String, _ tags: String, on client: some TestClientProtocol) async throws -> TestResponse
    {
        try await client.send(
            .put, notes + "/users/\(user)/tags", bearer: Harness.notesKey, json: #"{"tags":\#(tags)}"#)
    }

    static func broadcast(_ body: String, on client: some TestClientProtocol) async throws -> TestResponse {
        try await client.send(.post, notes + "/broadcasts", bearer: Harness.notesKey, json: body)
    }

    /// The broadcast `id` once it is done (or `nil` when it never gets there).
    static func done(_ id: String, on client: some TestClientProtocol) async throws -> [String: Any]? {
        var last: [String: Any]?
        let finished = await eventually {
            let response = try? await client.send(.get, notes + "/broadcasts/\(id)", bearer: Harness.notesKey)
            last = response?.object
            return last?.string("status") == "done"
        }
        return finished ? last : nil
    }

    /// How many of the user's notifications have `appNotificationId` `id` (the publisher's view).
    static func count(_ id: String, of user: String, on client: some TestClientProtocol) async throws -> Int {
        let history = try await client.send(.get, notes + "/users/\(user)/notifications", bearer: Harness.notesKey)
        return ReadViewTests.ids(history, "notifications").filter { $0 == id }.count
    }

    @Test("tags are replaced, read back in order, and refused with the index of a bad one")
    func tags() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let put = try await Self.putTags("alice", #"["plan:pro","lang:fr","plan:pro"]"#, on: client)
            #expect(put.status == .ok, "\(put.text)")
            #expect(put.object["tags"] as? [String] == ["lang:fr", "plan:pro"])
            let get = try await client.send(.get, Self.notes + "/users/alice/tags", bearer: Harness.notesKey)
            #expect(get.object["tags"] as? [String] == ["lang:fr", "plan:pro"])

            let control = try await Self.putTags("alice", #"["ok","bad\u0001"]"#, on: client)
            #expect(control.status == .badRequest)
            #expect(control.errorFields == ["tags[1]"], "\(control.text)")
            let many = (0...64).map { "\"t\($0)\"" }.joined(separator: ",")
            let tooMany = try await Self.putTags("alice", "[\(many)]", on: client)
            #expect(tooMany.status == .badRequest)
            #expect(tooMany.errorFields == ["tags"], "\(tooMany.text)")
            let notArray = try await Self.putTags("alice", #""pro""#, on: client)
            #expect(notArray.errorFields == ["tags"], "\(notArray.text)")
            let unkeyed = try await client.send(
                .put, Self.notes + "/users/alice/tags", bearer: Harness.tasksKey, json: #"{"tags":[]}"#)
            #expect(unkeyed.status == .unauthorized)
            let kept = try await client.send(.get, Self.notes + "/users/alice/tags", bearer: Harness.notesKey)
            #expect(kept.object["tags"] as? [String] == ["lang:fr", "plan:pro"], "refused requests change nothing")
        }
    }

    @Test("tag, all-users and listed audiences reach each of their users once, with progress")
    func audiences() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            for user in ["u1", "u2", "u3", "u4", "u5"] {
                try await client.registerRecording(
                    "dev-\(user)", token: "tok-\(user)", bearer: try await harness.token(user: user))
            }
            for (user, tags) in [
                ("u1", #"["pro"]"#), ("u2", #"["pro","fr"]"#), ("u3", #"["fr"]"#), ("u4", #"["pro"]"#),
            ] {
                #expect(try await Self.putTags(user, tags, on: client).status == .ok)
            }
            let tagged = try await Self.broadcast(
                #"{"audience":{"tags":{"anyOf":["pro"]}},"appNotificationId":"launch","payload":{"visualContent":{"title":"New"}}}"#,
                on: client)
            #expect(tagged.status == .accepted, "\(tagged.text)")
            let id = try #require(tagged.object.string("id"))
            #expect(tagged.headers[.location] == Self.notes + "/broadcasts/\(id)")
            #expect(["queued", "running", "done"].contains(tagged.object.string("status") ?? ""))
            let done = try #require(try await Self.done(id, on: client), "the broadcast finishes")
            #expect(done["audienceSize"] as? Int == 3)
            #expect(done["published"] as? Int == 3)
            #expect(done["failed"] as? Int == 0)
            #expect(done.string("completedDateTime") != nil)
            for user in ["u1", "u2", "u4"] {
                #expect(try await Self.count("launch", of: user, on: client) == 1, "\(user) has it once")
            }
            for user in ["u3", "u5"] {
                #expect(try await Self.count("launch", of: user, on: client) == 0, "\(user) is not tagged pro")
            }
            #expect(await eventually { harness.custom.deliveries(to: "dev-u2").count == 1 }, "u2's device is tapped")
            #expect(harness.custom.deliveries(to: "dev-u3").isEmpty)

            // Every user with an endpoint, the same appNotificationId: one notification each, updated.
            let all = try await Self.broadcast(
                #"{"audience":{"allUsers":true},"appNotificationId":"launch","payload":{"visualContent":{"title":"Newer"}}}"#,
                on: client)
            #expect(all.status == .accepted, "\(all.text)")
            let allID = try #require(all.object.string("id"))
            let allDone = try #require(try await Self.done(allID, on: client))
            #expect(allDone["audienceSize"] as? Int == 5)
            #expect(allDone["published"] as? Int == 5)
            for user in ["u1", "u2", "u3", "u4", "u5"] {
                #expect(try await Self.count("launch", of: user, on: client) == 1, "\(user) has one, updated")
            }
            let u1 = try await client.send(
                .get, Self.notes + "/users/u1/notifications/launch", bearer: Harness.notesKey)
            let visual = (u1.object["payload"] as? [String: Any])?["visualContent"] as? [String: Any]
            #expect(visual?["title"] as? String == "Newer")

            // A list, duplicates counted once; a user without endpoints gets a feed entry.
            let listed = try await Self.broadcast(
                #"{"audience":{"users":["u5","u3","u5","ghost"]},"appNotificationId":"listed","payload":{"rawContent":"x"}}"#,
                on: client)
            #expect(listed.status == .accepted, "\(listed.text)")
            #expect(listed.object["audienceSize"] as? Int == 3, "known at creation")
            let listedID = try #require(listed.object.string("id"))
            let listedDone = try #require(try await Self.done(listedID, on: client))
            #expect(listedDone["published"] as? Int == 3)
            #expect(try await Self.count("listed", of: "ghost", on: client) == 1)
            #expect(try await Self.count("listed", of: "u1", on: client) == 0)

            let page = try await client.send(.get, Self.notes + "/broadcasts?limit=2", bearer: Harness.notesKey)
            let ids = page.object.objects("broadcasts").compactMap { $0.string("id") }
            #expect(ids.count == 2)
            #expect(ids.first == listed.object.string("id"), "newest first")
            let next = try #require(page.object.string("next"))
            let rest = try await client.send(
                .get, Self.notes + "/broadcasts?limit=2&after=\(next)", bearer: Harness.notesKey)
            #expect(rest.object.objects("broadcasts").compactMap { $0.string("id") } == [id])
            #expect(rest.object.string("next") == nil)
        }
    }

    @Test("a bad broadcast is refused whole, naming the field, and nothing is stored")
    func validation() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let cases: [(String, [String])] = [
                (#"{"appNotificationId":"a","payload":{"rawContent":"x"}}"#, ["audience"]),
                (#"{"audience":{"allUsers":true,"users":["a"]},"payload":{"rawContent":"x"}}"#, ["audience"]),
                (#"{"audience":{"users":["a","bad\u0000"]},"payload":{"rawContent":"x"}}"#, ["audience.users[1]"]),
                (#"{"audience":{"tags":{}},"payload":{"rawContent":"x"}}"#, ["audience.tags"]),
                (#"{"audience":{"tags":{"anyOf":[1]}},"payload":{"rawContent":"x"}}"#, ["audience.tags.anyOf[0]"]),
                (#"{"audience":{"allUsers":true},"appNotificationId":"a"}"#, ["payload"]),
                (
                    #"{"audience":{"allUsers":true},"payload":{"rawContent":"x"},"expirationDateTime":"2001-01-01T00:00:00Z"}"#,
                    ["expirationDateTime"]
                ),
            ]
            for (body, fields) in cases {
                let response = try await Self.broadcast(body, on: client)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorFields == fields, "\(body): \(response.text)")
            }
            let list = try await client.send(.get, Self.notes + "/broadcasts", bearer: Harness.notesKey)
            #expect(list.object.objects("broadcasts").isEmpty, "nothing of a refused broadcast is stored")
            let generated = try await Self.broadcast(
                #"{"audience":{"allUsers":true},"payload":{"rawContent":"x"}}"#, on: client)
            #expect(generated.status == .accepted, "\(generated.text)")
            #expect(!(generated.object.string("appNotificationId") ?? "").isEmpty, "an appNotificationId is generated")
            let unknown = try await client.send(.get, Self.notes + "/broadcasts/nope", bearer: Harness.notesKey)
            #expect(unknown.status == .notFound)
        }
    }

    @Test("a cancelled broadcast publishes nothing more; a done one cannot be cancelled")
    func cancel() async throws {
        let harness = try await Harness(broadcasts: false)
        try await harness.run(.live) { client in
            let created = try await Self.broadcast(
                #"{"audience":{"users":["a","b","c","d"]},"appNotificationId":"c1","payload":{"rawContent":"x"}}"#,
                on: client)
            #expect(created.status == .accepted, "\(created.text)")
            #expect(created.object.string("status") == "queued")
            let id = try #require(created.object.string("id"))
            #expect(try await harness.hub.expandBroadcastChunk(), "one chunk of three users")
            let cancelled = try await client.send(.delete, Self.notes + "/broadcasts/\(id)", bearer: Harness.notesKey)
            #expect(cancelled.status == .ok, "\(cancelled.text)")
            #expect(cancelled.object.string("status") == "cancelled")
            #expect(cancelled.object["published"] as? Int == 3)
            #expect(try await !harness.hub.expandBroadcastChunk(), "nothing left to expand")
            #expect(try await Self.count("c1", of: "c", on: client) == 1)
            #expect(try await Self.count("c1", of: "d", on: client) == 0, "d was not published before the cancel")
            let again = try await client.send(.delete, Self.notes + "/broadcasts/\(id)", bearer: Harness.notesKey)
            #expect(again.status == .ok)
            #expect(again.object.string("status") == "cancelled")

            let small = try await Self.broadcast(
                #"{"audience":{"users":["a"]},"appNotificationId":"c2","payload":{"rawContent":"x"}}"#, on: client)
            let smallID = try #require(small.object.string("id"))
            #expect(try await harness.hub.expandBroadcastChunk())
            let done = try await client.send(.delete, Self.notes + "/broadcasts/\(smallID)", bearer: Harness.notesKey)
            #expect(done.status == .conflict, "\(done.text)")
        }
    }

    @Test("a chunk leased by an instance killed mid-chunk is taken over when its lease ends; every user once")
    func resumedAfterKilledInstance() async throws {
        let clock = ManualClock()
        let harness = try await Harness(clock: clock)
        let hub = harness.hub
        // Created before the hub runs; a "killed" instance leases the first chunk and never finishes it.
        let broadcast = try await hub.createBroadcast(
            app: Harness.notes, audience: .users(count: 5), users: ["a", "b", "c", "d", "e"],
            draft: NotificationDraft(appNotificationId: "k", payload: NotificationPayload(rawContent: "x")))
        let killed = try #require(
            try await hub.store.leaseBroadcastChunk(
                size: 3, owner: "killed", now: clock.date, leaseUntil: clock.date.addingTimeInterval(30)))
        #expect(killed.users == ["a", "b", "c"])
        try await harness.run(.live) { client in
            let path = Self.notes + "/broadcasts/\(broadcast.id)"
            #expect(
                await eventually {
                    (try? await client.send(.get, path, bearer: Harness.notesKey))?.object["published"] as? Int == 2
                }, "this instance publishes the chunk after the killed one's")
            #expect(try await Self.count("k", of: "d", on: client) == 1)
            #expect(
                try await Self.count("k", of: "a", on: client) == 0, "the killed instance's users wait for its lease")
            let running = try await client.send(.get, path, bearer: Harness.notesKey)
            #expect(running.object.string("status") == "running")
            #expect(running.object["audienceSize"] as? Int == 5)

            clock.advance(by: .seconds(31))
            let done = try #require(try await Self.done(broadcast.id, on: client), "taken over and finished")
            #expect(done["published"] as? Int == 5)
            for user in ["a", "b", "c", "d", "e"] {
                #expect(try await Self.count("k", of: user, on: client) == 1, "\(user) once")
            }
        }
    }

    @Test("the console lists broadcasts with their progress and cancels an open one")
    func console() async throws {
        let harness = try await Harness(broadcasts: false)
        try await harness.run { client in
            let created = try await Self.broadcast(
                #"{"audience":{"users":["a","b","c","d"]},"appNotificationId":"console-1","payload":{"rawContent":"x"}}"#,
                on: client)
            let id = try #require(created.object.string("id"))
            #expect(try await harness.hub.expandBroadcastChunk())
            let cookie = try await ConsoleAuthTests.session(client)
            let path = "/console/apps/\(Harness.notes)/broadcasts"
            let page = try await client.send(.get, path, headers: [.cookie: cookie])
            #expect(page.status == .ok)
            #expect(page.text.contains(#"<progress max="4" value="3">3 of 4</progress>"#), "\(page.text)")
            #expect(page.text.contains("4 listed users"))
            #expect(page.text.contains("3 published, 0 failed"))
            #expect(page.text.contains(#"action="\#(path)/\#(id)/cancel""#))
            #expect(page.text.contains(#"aria-current="page">Broadcasts</a>"#))
            let csrf = try await ConsoleAuthTests.csrfToken(client, cookie: cookie, path: path)
            let forged = try await ConsoleAuthTests.post(
                client, path + "/\(id)/cancel", body: "csrf=forged", headers: [.cookie: cookie])
            #expect(forged.status == .forbidden)
            let cancelled = try await ConsoleAuthTests.post(
                client, path + "/\(id)/cancel", body: "csrf=\(csrf)", headers: [.cookie: cookie])
            #expect(cancelled.status == .ok)
            #expect(cancelled.text.contains("cancelled after 3 users"), "\(cancelled.text)")
            #expect(!cancelled.text.contains("/cancel\""), "no cancel button for a cancelled broadcast")
            let api = try await client.send(.get, Self.notes + "/broadcasts/\(id)", bearer: Harness.notesKey)
            #expect(api.object.string("status") == "cancelled")
        }
    }
}
