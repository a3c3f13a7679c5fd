import Foundation
import HTTPTypes
import HubCore
import HubServer
import HubTesting
import HummingbirdTesting
import Testing

/// `POST /v1/apps/{app}/notifications/batch`, over real connections.
@Suite("Batch publish")
struct BatchPublishTests {
    static let route = "/v1/apps/\(Harness.notes)/notifications/batch"

    /// A batch body of `items` (each a user and a publish body's JSON object).
    static func body(_ items: [(user: String, body: String)]) -> String {
        let objects = items.map { item in
            #"{"userId":"\#(item.user)","# + item.body.dropFirst()
        }
        return #"{"notifications":["# + objects.joined(separator: ",") + "]}"
    }

    static func results(_ response: TestResponse) -> [[String: Any]] {
        response.object.objects("results")
    }

    @Test(
        "a batch with good and bad items: each has its own result in order; the bad ones name index and field and store nothing"
    )
    func mixedItems() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            let body = Self.body([
                ("alice", notification("m-1")),
                ("bob", #"{"appNotificationId":"m-2","payload":{"visualContent":{"title":7}}}"#),
                ("carol", notification("m-3", extra: #","priority":"urgent""#)),
                ("", notification("m-4")),
                ("alice", notification("m-5")),
                (
                    "dave",
                    #"{"appNotificationId":"m-6","payload":{"rawContent":"\#(String(repeating: "r", count: 5000))"}}"#
                ),
            ])
            let response = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
            #expect(response.status == .ok, "\(response.text)")
            let results = Self.results(response)
            #expect(results.map { $0["index"] as? Int } == [0, 1, 2, 3, 4, 5])
            #expect(results.map { $0["status"] as? Int } == [201, 400, 400, 400, 201, 413])
            #expect(
                (results[5]["problem"] as? [String: Any])?.string("type")
                    == "https://notificationhub.dev/problems/payload-too-large")
            #expect((results[0]["notification"] as? [String: Any])?.string("appNotificationId") == "m-1")
            #expect((results[4]["notification"] as? [String: Any])?.string("appNotificationId") == "m-5")
            func fields(_ index: Int) -> [String] {
                ((results[index]["problem"] as? [String: Any])?.objects("errors") ?? []).compactMap {
                    $0.string("field")
                }
            }
            #expect(fields(1) == ["notifications[1].payload.visualContent.title"])
            #expect(fields(2) == ["notifications[2].priority"])
            #expect(fields(3) == ["notifications[3].userId"])
            let problem = results[1]["problem"] as? [String: Any]
            #expect(problem?.string("type") == "https://notificationhub.dev/problems/invalid-request")
            #expect(problem?.string("detail")?.hasPrefix("Item 1 ") == true, "\(problem ?? [:])")
            #expect(results[1]["notification"] == nil)

            // Nothing of a refused item is stored.
            for (user, id) in [("bob", "m-2"), ("carol", "m-3"), ("dave", "m-6")] {
                let history = try await client.send(
                    .get, "/v1/apps/\(Harness.notes)/users/\(user)/notifications?status=all", bearer: Harness.notesKey)
                #expect(history.object.objects("notifications").isEmpty, "\(user) has no \(id)")
            }
            let alice = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/alice/notifications", bearer: Harness.notesKey)
            #expect(
                Set(alice.object.objects("notifications").compactMap { $0.string("appNotificationId") }) == [
                    "m-1", "m-5",
                ])
        }
    }

    @Test("a retried batch duplicates nothing: items update, and taps are those a single republish makes")
    func retriedBatch() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            for user in ["alice", "bob", "dave"] {
                try await client.registerRecording(
                    "\(user)-phone", token: "ok-\(user)", bearer: try await harness.token(user: user))
            }
            let body = Self.body([("alice", notification("outage")), ("bob", notification("outage"))])
            let first = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
            #expect(Self.results(first).map { $0["status"] as? Int } == [201, 201], "\(first.text)")
            // The control: a single publish, then a single republish.
            #expect(try await client.publish(notification("outage"), user: "dave").status == .created)
            #expect(
                await eventually {
                    ["alice", "bob", "dave"].allSatisfy { harness.custom.deliveries(to: "\($0)-phone").count == 1 }
                })

            let retry = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
            #expect(Self.results(retry).map { $0["status"] as? Int } == [200, 200], "\(retry.text)")
            let ids = { (response: TestResponse) in
                Self.results(response).compactMap { ($0["notification"] as? [String: Any])?.string("id") }
            }
            #expect(ids(retry) == ids(first), "the retry updates the same notifications")
            #expect(try await client.publish(notification("outage"), user: "dave").status == .ok)
            #expect(
                await eventually {
                    ["alice", "bob", "dave"].allSatisfy { harness.custom.deliveries(to: "\($0)-phone").count == 2 }
                })
            for user in ["alice", "bob"] {
                let history = try await client.send(
                    .get, "/v1/apps/\(Harness.notes)/users/\(user)/notifications?status=all", bearer: Harness.notesKey)
                #expect(history.object.objects("notifications").count == 1, "\(user) has the notification once")
                #expect(
                    harness.custom.deliveries(to: "\(user)-phone").count
                        == harness.custom.deliveries(to: "dave-phone").count,
                    "as many taps as a single republish makes")
            }
        }
    }

    @Test("1,000 items are accepted in one request; 1,001 get 413 naming the limit; none or no array get 400")
    func limits() async throws {
        let harness = try await Harness(rateLimits: .off)
        try await harness.run(.live) { client in
            let thousand = Self.body((0..<1000).map { ("user-\($0)", notification("n-\($0)", title: "A title")) })
            #expect(thousand.utf8.count > 64 * 1024, "larger than a single publish's body limit")
            let accepted = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: thousand)
            #expect(accepted.status == .ok, "\(accepted.text.prefix(500))")
            #expect(Self.results(accepted).count == 1000)
            #expect(Self.results(accepted).allSatisfy { $0["status"] as? Int == 201 })

            let over = Self.body((0..<1001).map { ("user-\($0)", notification("o-\($0)")) })
            let refused = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: over)
            #expect(refused.status == .contentTooLarge)
            #expect(refused.problemType == "batch-too-large")
            #expect(refused.object.string("detail")?.contains("at most 1000") == true, "\(refused.text)")
            let history = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/users/user-0/notifications", bearer: Harness.notesKey)
            #expect(
                history.object.objects("notifications").map { $0.string("appNotificationId") } == ["n-0"],
                "nothing of a refused batch is stored")

            for body in [#"{"notifications":[]}"#, #"{}"#, #"{"notifications":{"userId":"a"}}"#] {
                let response = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorFields == ["notifications"], "\(body)")
            }
            let unauthorized = try await client.send(.post, Self.route, bearer: Harness.tasksKey, json: thousand)
            #expect(unauthorized.status == .unauthorized)
        }
    }

    @Test("a body over the batch limit gets 413 body-too-large")
    func bodyLimit() async throws {
        let harness = try await Harness(maxBatchBodyBytes: 64 * 1024)
        try await harness.run(.live) { client in
            let body = Self.body((0..<600).map { ("user-\($0)", notification("n-\($0)")) })
            let response = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
            #expect(response.status == .contentTooLarge)
            #expect(response.problemType == "body-too-large")
        }
    }

    @Test("rate limits count items: the publisher key's budget holds whole batches, a user's budget each item")
    func rateLimitsCountItems() async throws {
        let limits = RateLimits(
            publisherKey: RateLimit(10, per: .seconds(3600)), userPublishes: RateLimit(3, per: .seconds(3600)),
            deviceToken: nil, clientIP: nil)
        let harness = try await Harness(rateLimits: limits)
        try await harness.run(.live) { client in
            // Four items for one user: the fourth is over the user's budget, the others are stored.
            let four = Self.body((0..<4).map { ("alice", notification("a-\($0)")) })
            let first = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: four)
            #expect(Self.results(first).map { $0["status"] as? Int } == [201, 201, 201, 429], "\(first.text)")
            let limited = Self.results(first)[3]["problem"] as? [String: Any]
            #expect(limited?.string("type") == "https://notificationhub.dev/problems/rate-limited")
            // Four more items: 8 of the key's 10 are spent after two requests.
            let others = Self.body((0..<4).map { ("user-\($0)", notification("b-\($0)")) })
            let second = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: others)
            #expect(Self.results(second).allSatisfy { $0["status"] as? Int == 201 }, "\(second.text)")
            // A third request of four items is over the key's budget: 429, nothing stored.
            let third = try await client.send(
                .post, Self.route, bearer: Harness.notesKey,
                json: Self.body((0..<4).map { ("late-\($0)", notification("c-\($0)")) }))
            #expect(third.status == .tooManyRequests, "\(third.text)")
            #expect(third.headers[.retryAfter] != nil)
            // (Read through the hub: the key's budget is spent.)
            let stored = try await harness.hub.history(
                app: Harness.notes, user: "late-0", filter: HistoryFilter(status: nil))
            #expect(stored.isEmpty, "nothing of a batch refused by the key's budget is stored")
        }
    }

    @Test("items of a batch reach the user's endpoints as a single publish's do")
    func deliveries() async throws {
        let harness = try await Harness()
        try await harness.run(.live) { client in
            for user in ["alice", "bob"] {
                try await client.registerRecording(
                    "\(user)-tablet", token: "ok-\(user)", bearer: try await harness.token(user: user))
            }
            let body = Self.body([("alice", notification("hello")), ("bob", notification("hello"))])
            let response = try await client.send(.post, Self.route, bearer: Harness.notesKey, json: body)
            #expect(response.status == .ok)
            let ids = Self.results(response).compactMap { ($0["notification"] as? [String: Any])?.string("id") }
            #expect(
                await eventually {
                    harness.custom.deliveries(to: "alice-tablet").count == 1
                        && harness.custom.deliveries(to: "bob-tablet").count == 1
                })
            #expect(harness.custom.deliveries(to: "alice-tablet").first?.delivery.notificationId == ids.first)
            #expect(harness.custom.deliveries(to: "bob-tablet").first?.delivery.notificationId == ids.last)
        }
    }
}
