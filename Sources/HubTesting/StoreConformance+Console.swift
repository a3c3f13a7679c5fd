import Foundation
public import HubCore

// The console's reads (``HubCore/ConsoleQueries``): every store that implements them must pass
// these checks. They take a store and call ``HubCore/Store/migrate()`` themselves, like the rest
// of the suite.
extension StoreConformance {
    /// The checks of ``HubCore/ConsoleQueries``, for stores that implement it.
    public static let console: [Check] = [
        Check(name: "consoleNotificationPages", run: consoleNotificationPages),
        Check(name: "consoleNotificationFilters", run: consoleNotificationFilters),
        Check(name: "consoleFailuresGrouped", run: consoleFailuresGrouped),
        Check(name: "consoleEndpointSearch", run: consoleEndpointSearch),
    ]

    private static func queries(_ store: any Store, _ expect: Expect) throws -> any ConsoleQueries {
        guard let queries = store as? any ConsoleQueries else {
            throw expect.fail("the store does not implement ConsoleQueries")
        }
        return queries
    }

    /// Pages of 3 walk an app's notifications newest first (creation time, then ID), each once,
    /// whatever the users; the other app's never show.
    public static func consoleNotificationPages(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let queries = try queries(store, expect)
        var published: [UserNotification] = []
        for second in 0..<4 {
            for key in [Fixture.alice, Fixture.bob] {
                published.append(
                    try await Fixture.publish(store, Fixture.draft("n\(second)"), for: key, at: Fixture.at(second))
                        .notification)
            }
        }
        try await Fixture.publish(store, Fixture.draft("other"), for: FeedKey(appId: "other.example", userId: "alice"))
        let newestFirst = published.sorted {
            ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id)
        }.map(\.id)
        var read: [String] = []
        var after: ConsoleNotificationPosition?
        for _ in 0..<10 {
            let page = try await queries.consoleNotifications(
                appId: Fixture.app, filter: ConsoleNotificationFilter(), after: after, limit: 3)
            read += page.map(\.id)
            guard page.count == 3, let last = page.last else { break }
            after = ConsoleNotificationPosition(last)
        }
        try expect.equal(read, newestFirst, "pages of 3 cover the app's notifications once, newest first")
        let first = try await queries.consoleNotifications(
            appId: Fixture.app, filter: ConsoleNotificationFilter(), after: nil, limit: 1)
        try expect.equal(first.first?.payload.visualContent?.title, "Hello", "the content as stored")
        try expect.equal(first.first?.payload.rawContent, "{\"n\":1}", "the raw content as stored")
        try expect.equal(first.first?.groupName, "group", "the group as stored")
    }

    /// Filters by user, appNotificationId, stored status and creation time, alone and together, with a position.
    public static func consoleNotificationFilters(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let queries = try queries(store, expect)
        for second in 0..<3 {
            for key in [Fixture.alice, Fixture.bob] {
                try await Fixture.publish(store, Fixture.draft("n\(second)"), for: key, at: Fixture.at(second * 60))
            }
        }
        _ = try await store.delete(Fixture.bob, appNotificationId: "n0", at: Fixture.at(500))
        func ids(
            _ filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition? = nil
        ) async throws -> [String] {
            try await queries.consoleNotifications(appId: Fixture.app, filter: filter, after: after, limit: 50)
                .map { "\($0.userId)/\($0.appNotificationId)" }
        }
        try expect.equal(
            try await ids(.init(userId: "alice")), ["alice/n2", "alice/n1", "alice/n0"], "one user's, newest first")
        try expect.equal(
            try await ids(.init(appNotificationId: "n1")), ["bob/n1", "alice/n1"], "one appNotificationId, every user")
        try expect.equal(try await ids(.init(status: .deleted)), ["bob/n0"], "by status")
        try expect.equal(
            try await ids(.init(from: Fixture.at(60), to: Fixture.at(120))), ["bob/n1", "alice/n1"],
            "from inclusive, to exclusive")
        try expect.equal(
            try await ids(.init(userId: "bob", status: .active, from: Fixture.at(0))), ["bob/n2", "bob/n1"],
            "filters together")
        let newest = try await queries.consoleNotifications(
            appId: Fixture.app, filter: .init(userId: "alice"), after: nil, limit: 1)
        try expect.equal(
            try await ids(.init(userId: "alice"), after: newest.first.map(ConsoleNotificationPosition.init)),
            ["alice/n1", "alice/n0"], "a filtered page after a position")
    }

    /// Failed deliveries in a range: gone, rejected, gave up (finished) and suspended (parked),
    /// newest first, grouped by transport, outcome and reason; delivered ones and those outside the
    /// range never show.
    public static func consoleFailuresGrouped(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let queries = try queries(store, expect)
        let ids = ["e1", "e2", "e3", "e4", "e5", "e6"]
        for id in ids { _ = try await store.upsertEndpoint(Fixture.endpoint(id)) }
        try await Fixture.publish(store, Fixture.draft("f-1"), mode: .visible)
        let claimed = try await Fixture.claim(store, at: Fixture.t0)
        try expect.equal(claimed.map(\.delivery.endpointId), ids, "one visible delivery per endpoint")
        let outcomes: [OutboxOutcome.Change] = [
            .finish(.endpointGone, detail: "410 Unregistered", goneSince: nil),
            .finish(.rejected, detail: "400 BadDeviceToken", goneSince: nil),
            .finish(.rejected, detail: "400 BadDeviceToken", goneSince: nil),
            .finish(.gaveUp, detail: "503 after 8 attempts", goneSince: nil),
            .suspend(reason: "403 InvalidProviderToken"),
            .finish(.delivered, detail: nil, goneSince: nil),
        ]
        for (index, (delivery, outcome)) in zip(claimed, outcomes).enumerated() {
            try await store.recordOutcomes([
                OutboxOutcome(id: delivery.delivery.id, outcome, at: Fixture.at(10 + index))
            ])
        }
        let failures = try await queries.consoleFailures(
            appId: Fixture.app, from: Fixture.t0, to: Fixture.at(60), limit: 10)
        try expect.equal(
            failures.map(\.endpointId), ["e5", "e4", "e3", "e2", "e1"],
            "the failures, newest first, not the delivered one")
        try expect.equal(
            failures.map(\.outcome), [.suspended, .gaveUp, .rejected, .rejected, .gone], "each outcome")
        try expect.equal(failures.last?.reason, "410 Unregistered", "with the reason")
        try expect.equal(failures.last?.at, Fixture.at(10), "when it finished")
        try expect.equal(failures.last?.notificationId, claimed[0].delivery.notificationId, "its notification")
        try expect.equal(failures.first?.at, Fixture.at(14), "a suspended one at the time it was parked")
        try expect.equal(
            try await queries.consoleFailures(appId: Fixture.app, from: Fixture.at(12), to: Fixture.at(14), limit: 10)
                .map(\.endpointId), ["e4", "e3"], "only the range (from inclusive, to exclusive)")
        try expect.equal(
            try await queries.consoleFailures(appId: Fixture.app, from: Fixture.t0, to: Fixture.at(60), limit: 2)
                .map(\.endpointId), ["e5", "e4"], "at most the limit")
        let groups = try await queries.consoleFailureGroups(appId: Fixture.app, from: Fixture.t0, to: Fixture.at(60))
        try expect.equal(groups.count, 4, "four groups")
        try expect.equal(
            groups.first,
            ConsoleFailureGroup(
                transport: .apns, outcome: .rejected, reason: "400 BadDeviceToken", count: 2, latest: Fixture.at(12)),
            "the largest group first, with its count and latest time")
        try expect.equal(
            Set(groups.dropFirst().map { "\($0.outcome) \($0.reason ?? "") \($0.count)" }),
            ["gone 410 Unregistered 1", "gaveUp 503 after 8 attempts 1", "suspended 403 InvalidProviderToken 1"],
            "the other groups")
        try expect.equal(
            try await queries.consoleFailureGroups(appId: "other.example", from: Fixture.t0, to: Fixture.at(60)), [],
            "another app has none")
    }

    /// An app's endpoints of one state by the start of the user ID and of the endpoint ID, paged.
    public static func consoleEndpointSearch(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let queries = try queries(store, expect)
        let alicia = FeedKey(appId: Fixture.app, userId: "alicia")
        for (key, ids) in [(Fixture.alice, ["phone", "pad", "web"]), (alicia, ["phone"]), (Fixture.bob, ["phone"])] {
            for id in ids { _ = try await store.upsertEndpoint(Fixture.endpoint(id, of: key)) }
        }
        func ids(
            _ user: String, _ endpoint: String, state: EndpointState = .active, after: EndpointPosition? = nil,
            limit: Int = 50
        ) async throws -> [String] {
            try await queries.consoleEndpoints(
                appId: Fixture.app, state: state, userPrefix: user, endpointPrefix: endpoint, after: after, limit: limit
            ).map { "\($0.userId)/\($0.id)" }
        }
        try expect.equal(
            try await ids("", ""), ["alice/pad", "alice/phone", "alice/web", "alicia/phone", "bob/phone"], "every one")
        try expect.equal(
            try await ids("ali", ""), ["alice/pad", "alice/phone", "alice/web", "alicia/phone"],
            "users starting with ali")
        try expect.equal(try await ids("alice", ""), ["alice/pad", "alice/phone", "alice/web"], "one user")
        try expect.equal(
            try await ids("", "ph"), ["alice/phone", "alicia/phone", "bob/phone"], "endpoints starting with ph")
        try expect.equal(try await ids("ali", "p", limit: 2), ["alice/pad", "alice/phone"], "a page")
        try expect.equal(
            try await ids("ali", "p", after: EndpointPosition(userId: "alice", endpointId: "phone")), ["alicia/phone"],
            "the next page")
        try expect.equal(try await ids("", "", state: .inactive), [], "only the state asked")
        try expect.equal(try await ids("zed", ""), [], "no match")
    }
}
