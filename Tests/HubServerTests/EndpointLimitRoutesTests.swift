import Foundation
import HTTPTypes
import HubCore
import HubServer
import HummingbirdTesting
import Testing

/// Issue 46: a user's endpoints are limited, and endpoint listings are paged.
@Suite("Endpoint limit and listing pages")
struct EndpointLimitRoutesTests {
    static func register(_ id: String) -> String {
        "/v1/apps/\(Harness.notes)/me/endpoints/\(id)"
    }
    static let polling = #"{"platform":"ios","appId":"com.contoso.notes","transport":"polling"}"#

    @Test("a new endpoint past the user's limit is a 409 problem naming the limit; refresh and delete still work")
    func limitOverHTTP() async throws {
        let harness = try await Harness(maxEndpointsPerUser: 3)
        let alice = try await harness.token(user: "alice")
        let bob = try await harness.token(user: "bob")
        try await harness.run(.live) { client in
            for id in ["p1", "p2", "p3"] {
                let created = try await client.send(.put, Self.register(id), bearer: alice, json: Self.polling)
                #expect(created.status == .created, "\(created.text)")
            }
            let refused = try await client.send(.put, Self.register("p4"), bearer: alice, json: Self.polling)
            #expect(refused.status == .conflict)
            #expect(refused.headers[.contentType] == "application/problem+json")
            let detail = refused.object.string("detail") ?? ""
            #expect(detail.contains("limits.maxEndpointsPerUser = 3"), "\(detail)")
            #expect(detail.contains("Delete an endpoint"), "\(detail)")
            let listed = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: alice)
            #expect(listed.object.objects("endpoints").compactMap { $0.string("id") } == ["p1", "p2", "p3"])

            #expect(
                try await client.send(.put, Self.register("p2"), bearer: alice, json: Self.polling).status == .ok,
                "refreshing an existing endpoint at the limit")
            #expect(
                try await client.send(.put, Self.register("p4"), bearer: bob, json: Self.polling).status == .created,
                "another user has room of their own")
            #expect(try await client.send(.delete, Self.register("p1"), bearer: alice).status == .noContent)
            #expect(
                try await client.send(.put, Self.register("p4"), bearer: alice, json: Self.polling).status == .created,
                "a delete makes room")
        }
    }

    @Test("listings are paged with limit and after; next names the next page until the last")
    func pagedListings() async throws {
        let harness = try await Harness()
        let alice = try await harness.token(user: "alice")
        let bob = try await harness.token(user: "bob")
        try await harness.run(.live) { client in
            for id in ["a1", "a2", "a3", "a4", "a5"] {
                #expect(
                    try await client.send(.put, Self.register(id), bearer: alice, json: Self.polling).status == .created
                )
            }
            for id in ["b1", "b2"] {
                #expect(
                    try await client.send(.put, Self.register(id), bearer: bob, json: Self.polling).status == .created)
            }

            /// Follows `next` from `first`; returns the IDs of every page, page by page.
            func pages(_ first: String, bearer: String) async throws -> [[String]] {
                var pages: [[String]] = []
                var uri: String? = first
                while let next = uri, pages.count < 10 {
                    let page = try await client.send(.get, next, bearer: bearer)
                    #expect(page.status == .ok, "\(page.text)")
                    pages.append(
                        page.object.objects("endpoints").map {
                            [$0.string("userId"), $0.string("id")].compactMap { $0 }.joined(separator: "/")
                        })
                    uri = page.object.string("next")
                    if uri != nil { #expect(page.object.string("nextAfter") != nil) }
                }
                return pages
            }

            let mine = try await pages("/v1/apps/\(Harness.notes)/me/endpoints?limit=2", bearer: alice)
            #expect(mine == [["a1", "a2"], ["a3", "a4"], ["a5"]])
            let whole = try await client.send(.get, "/v1/apps/\(Harness.notes)/me/endpoints", bearer: alice)
            #expect(whole.object.objects("endpoints").count == 5, "the default page holds them all")
            #expect(whole.object["next"] == nil, "no next on the last page")

            let app = try await pages("/v1/apps/\(Harness.notes)/endpoints?limit=3", bearer: Harness.adminToken)
            #expect(
                app == [
                    ["alice/a1", "alice/a2", "alice/a3"], ["alice/a4", "alice/a5", "bob/b1"], ["bob/b2"],
                ])
            let active = try await pages(
                "/v1/apps/\(Harness.notes)/endpoints?state=active&limit=4", bearer: Harness.adminToken)
            #expect(active.flatMap { $0 }.count == 7, "state is kept in next")
            let user = try await pages(
                "/v1/apps/\(Harness.notes)/users/bob/endpoints?limit=1", bearer: Harness.adminToken)
            #expect(user == [["bob/b1"], ["bob/b2"]])

            let badLimit = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/me/endpoints?limit=0", bearer: alice)
            #expect(badLimit.status == .badRequest)
            #expect(badLimit.errorFields == ["limit"])
            let badCursor = try await client.send(
                .get, "/v1/apps/\(Harness.notes)/endpoints?after=nouser", bearer: Harness.adminToken)
            #expect(badCursor.status == .badRequest)
            #expect(badCursor.errorFields == ["after"])
        }
    }
}
