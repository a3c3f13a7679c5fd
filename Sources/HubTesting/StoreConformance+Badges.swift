public import HubCore

// Checks that the badge counters follow every change of a notification (`BadgeCount`).
extension StoreConformance {
    /// The badge of each platform counts the user's active, unread, undismissed notifications
    /// that target it, through publishes (one and batched, a republish that changes the
    /// targeting), state changes (read, dismissed, unread again, a change that changes nothing),
    /// a deletion, the sweep's release of a scheduled notification and expiry; another user's and
    /// another app's counts stay apart.
    public static func badgeCounts(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        func badges(_ key: FeedKey = Fixture.alice) async throws -> [Int] {
            var counts: [Int] = []
            for platform in [Platform.ios, .android, .windows, .web] {
                counts.append(try await store.badgeCount(key, platform: platform))
            }
            return counts
        }
        func change(_ id: String, read: ReadState? = nil, action: UserActionState? = nil, at seconds: Int) async throws
        {
            _ = try await store.updateState(
                StateChange(
                    key: Fixture.alice, id: id, readState: read, userActionState: action, exceptEndpoint: nil,
                    now: Fixture.at(seconds), planner: .standard))
        }
        try expect.equal(try await badges(), [0, 0, 0, 0], "no notifications, no badge")
        try await Fixture.publish(store, Fixture.draft("all"))
        try await Fixture.publish(store, Fixture.draft("ios", platforms: [.ios, .ios]))
        try await Fixture.publish(store, Fixture.draft("mobile", platforms: [.ios, .android]))
        try await Fixture.publish(store, Fixture.draft("bob"), for: Fixture.bob)
        try expect.equal(try await badges(), [3, 2, 1, 1], "after three publishes (ios, android, windows, web)")
        try expect.equal(try await badges(Fixture.bob), [1, 1, 1, 1], "another user's count")
        try expect.equal(
            try await store.badgeCount(FeedKey(appId: "other.contoso.com", userId: "alice"), platform: .ios), 0,
            "another app's count")

        try await change("all", read: .read, at: 1)
        try expect.equal(try await badges(), [2, 1, 0, 0], "read lowers every platform it targets")
        try await change("all", read: .read, at: 2)
        try expect.equal(try await badges(), [2, 1, 0, 0], "a change to the same state changes nothing")
        try await change("ios", action: .dismissed, at: 3)
        try expect.equal(try await badges(), [1, 1, 0, 0], "a dismissed notification is not counted")
        try await change("ios", read: .read, at: 4)
        try expect.equal(try await badges(), [1, 1, 0, 0], "read and dismissed counts once, not twice")
        try await change("all", read: .unread, at: 5)
        try expect.equal(try await badges(), [2, 2, 1, 1], "unread again counts again")
        try await change("all", action: .activated, at: 6)
        try expect.equal(try await badges(), [2, 2, 1, 1], "activated but unread still counts")

        var retargeted = Fixture.draft("mobile", platforms: [.windows])
        retargeted.payload.visualContent = VisualContent(title: "Moved")
        try await Fixture.publish(store, retargeted, at: Fixture.at(7))
        try expect.equal(try await badges(), [1, 1, 2, 1], "a republish moves the count to its new platforms")

        _ = try await store.delete(Fixture.alice, appNotificationId: "mobile", at: Fixture.at(8))
        try expect.equal(try await badges(), [1, 1, 1, 1], "a deleted notification is not counted")
        _ = try await store.delete(Fixture.alice, appNotificationId: "mobile", at: Fixture.at(9))
        try expect.equal(try await badges(), [1, 1, 1, 1], "deleting a tombstone changes nothing")

        _ = try await store.publish(
            batch: [
                Fixture.request(Fixture.draft("b-1", platforms: [.web]), for: Fixture.alice, newId: "b-1"),
                Fixture.request(Fixture.draft("b-2"), for: Fixture.bob, newId: "b-2"),
                Fixture.request(Fixture.draft("b-1", platforms: [.android]), for: Fixture.alice, newId: "b-1x"),
                Fixture.request(Fixture.draft("b-3", platforms: [.android]), for: Fixture.alice, newId: "b-3"),
            ])
        try expect.equal(try await badges(), [1, 3, 1, 1], "a batch, with a notification published twice")
        try expect.equal(try await badges(Fixture.bob), [2, 2, 2, 2], "a batch's other user")

        var scheduled = Fixture.draft("later", platforms: [.ios])
        scheduled.scheduledDateTime = Fixture.at(30)
        try await Fixture.publish(store, scheduled, at: Fixture.at(10))
        try await Fixture.publish(store, Fixture.draft("short", platforms: [.ios]), at: Fixture.at(10), expiresIn: 50)
        try expect.equal(try await badges(), [2, 3, 1, 1], "a scheduled notification is not counted before its time")
        _ = try await store.sweep(now: Fixture.at(30), purgeBefore: Fixture.t0)
        try expect.equal(try await badges(), [3, 3, 1, 1], "its release counts it")
        _ = try await store.sweep(now: Fixture.at(60), purgeBefore: Fixture.t0)
        try expect.equal(try await badges(), [2, 3, 1, 1], "an expired notification is not counted")
        try expect.equal(try await badges(Fixture.bob), [2, 2, 2, 2], "the sweep leaves the other user alone")
    }
}
