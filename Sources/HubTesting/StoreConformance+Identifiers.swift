import Foundation
public import HubCore

// The stores' last guard: a value the Identifier grammar refuses is never bound to SQL.
extension StoreConformance {
    /// Values the ``HubCore/Identifier`` grammar refuses, each with what it looks like to a store
    /// that cuts text at a NUL or trims it (`bob` for `bob\0evil`).
    static let refusedIdentifiers: [String] = [
        "bob\u{0}evil", "bob\r\nevil", "bob\tevil", "bob\u{7F}", "bob\u{85}", "bob\u{202E}live", "bob\u{2066}",
        "", String(repeating: "b", count: Identifier.maxBytes + 1),
    ]

    /// Every feed, notification and endpoint call refuses a user ID, app ID, notification ID or
    /// endpoint ID the grammar refuses with `invalid-request` before it reaches the database, so
    /// `bob\0evil` never reads, changes or deletes `bob`'s data (SQLite binds text up to its first
    /// NUL), and two `appNotificationId`s that differ after a NUL stay apart.
    public static func refusedIdentifiersNeverReachTheStore(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1", of: Fixture.bob))
        let (stored, _) = try await Fixture.publish(store, Fixture.draft("n1"), for: Fixture.bob)

        func refuses(
            _ what: String, file: StaticString = #fileID, line: UInt = #line,
            _ call: () async throws -> Void
        ) async throws {
            do {
                try await call()
            } catch let error as HubError where error.code == .invalidRequest && !error.fieldErrors.isEmpty {
                return
            } catch {
                throw expect.fail("\(what): expected HubError invalid-request, got \(error)", file: file, line: line)
            }
            throw expect.fail("\(what): the store took the value", file: file, line: line)
        }

        for bad in refusedIdentifiers {
            let user = FeedKey(appId: Fixture.app, userId: bad)
            let app = FeedKey(appId: bad, userId: "bob")
            let shown = bad.debugDescription.prefix(40)
            for key in [user, app] {
                try await refuses("history of \(key.userId == "bob" ? "app" : "user") \(shown)") {
                    _ = try await store.history(key, filter: HistoryFilter())
                }
                try await refuses("feed \(shown)") { _ = try await store.feed(key, after: 0, limit: 10) }
                try await refuses("notification of \(shown)") { _ = try await store.notification(key, id: stored.id) }
                try await refuses("delete for \(shown)") {
                    _ = try await store.delete(key, appNotificationId: "n1", at: Fixture.t0)
                }
                try await refuses("endpoints of \(shown)") { _ = try await store.endpoints(key) }
                try await refuses("endpoint of \(shown)") { _ = try await store.endpoint(key, id: "e1") }
                try await refuses("deleteEndpoint of \(shown)") { _ = try await store.deleteEndpoint(key, id: "e1") }
                try await refuses("touchEndpoint of \(shown)") {
                    try await store.touchEndpoint(key, id: "e1", syncedAt: Fixture.t0)
                }
                try await refuses("publish for \(shown)") {
                    try await Fixture.publish(store, Fixture.draft("n1"), for: key)
                }
                try await refuses("state change for \(shown)") {
                    _ = try await store.updateState(
                        StateChange(
                            key: key, id: "n1", readState: .read, userActionState: nil, exceptEndpoint: nil,
                            now: Fixture.t0))
                }
                try await refuses("register for \(shown)") {
                    _ = try await store.upsertEndpoint(
                        Fixture.endpoint("e1", of: key, token: "token-\(key.userId)-\(key.appId)"))
                }
            }
            try await refuses("endpoints of app \(shown)") { _ = try await store.endpoints(appId: bad, state: nil) }
            try await refuses("notification ID \(shown)") { _ = try await store.notification(Fixture.bob, id: bad) }
            try await refuses("delete of \(shown)") {
                _ = try await store.delete(Fixture.bob, appNotificationId: bad, at: Fixture.t0)
            }
            try await refuses("state change of \(shown)") {
                _ = try await store.updateState(
                    StateChange(
                        key: Fixture.bob, id: bad, readState: .read, userActionState: nil, exceptEndpoint: nil,
                        now: Fixture.t0))
            }
            try await refuses("publish of appNotificationId \(shown)") {
                try await Fixture.publish(store, Fixture.draft(bad), for: Fixture.bob)
            }
            var grouped = Fixture.draft("n2")
            grouped.groupName = bad
            try await refuses("publish with groupName \(shown)") {
                try await Fixture.publish(store, grouped, for: Fixture.bob)
            }
            try await refuses("endpoint ID \(shown)") { _ = try await store.endpoint(Fixture.bob, id: bad) }
            try await refuses("deleteEndpoint ID \(shown)") { _ = try await store.deleteEndpoint(Fixture.bob, id: bad) }
            try await refuses("register endpoint ID \(shown)") {
                _ = try await store.upsertEndpoint(Fixture.endpoint(bad, of: Fixture.bob, token: "token-other"))
            }
        }
        try await refuses("a token with a NUL") {
            _ = try await store.upsertEndpoint(Fixture.endpoint("e2", of: Fixture.bob, token: "token-bob-e1\u{0}x"))
        }

        // Nothing of bob's was read, changed or removed, and nothing else was stored.
        let history = try await store.history(Fixture.bob, filter: HistoryFilter(status: nil))
        try expect.equal(history.map(\.appNotificationId), ["n1"], "bob's notifications after the refusals")
        try expect.equal(history.first?.status, .active, "bob's notification stays active")
        try expect.equal(history.first?.readState, .unread, "bob's notification stays unread")
        try expect.equal(history.first?.changeVersion, stored.changeVersion, "bob's notification is unchanged")
        try expect.equal(
            try await store.endpoints(appId: Fixture.app, state: nil).map(\.id), ["e1"], "the app's endpoints")
        try expect.equal(
            try await store.endpoint(Fixture.bob, id: "e1")?.token, "token-bob-e1", "bob's endpoint keeps its token")

        // Valid identifiers that only differ in bytes a careless store would lose stay apart.
        for (first, second) in [("n\u{E9}", "ne\u{301}"), ("pad ", "pad"), ("Case", "case")] {
            try await Fixture.publish(store, Fixture.draft(first), for: Fixture.alice)
            let again = try await Fixture.publish(store, Fixture.draft(second), for: Fixture.alice)
            try expect.that(
                again.created, "'\(second.debugDescription)' is another notification than '\(first.debugDescription)'")
        }
    }
}
