public import HubCore

// Checks of notifications and feeds.
extension StoreConformance {
    /// A new `appNotificationId` creates a notification with fresh states; publishing it again
    /// replaces its content, keeps its ID and states, and gives it a newer change version.
    public static func publishCreatesAndUpdates(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try await store.migrate()
        let draft = Fixture.draft("a-1", priority: .low, fallback: 120, mode: .visible)
        let (first, created) = try await Fixture.publish(store, draft, at: Fixture.t0)
        try expect.that(created, "the first publish creates")
        try expect.equal(first.id, "alice-a-1-0", "id of a new notification")
        try expect.equal(first.appId, Fixture.app, "appId")
        try expect.equal(first.userId, "alice", "userId")
        try expect.equal(first.appNotificationId, "a-1", "appNotificationId")
        try expect.equal(first.groupName, "group", "groupName")
        try expect.equal(first.priority, .low, "priority")
        try expect.equal(first.payload, draft.payload, "payload")
        try expect.equal(first.targetPolicy, draft.targetPolicy, "targetPolicy")
        try expect.equal(first.displayTimeToLive, 60, "displayTimeToLive")
        try expect.equal(first.fallbackPolicy, FallbackPolicy(timeoutSeconds: 120), "fallbackPolicy")
        try expect.equal(first.deliveryMode, .visible, "deliveryMode")
        try expect.equal(first.expirationDateTime, Fixture.at(86_400), "expirationDateTime")
        try expect.equal(first.createdDateTime, Fixture.t0, "createdDateTime")
        try expect.equal(first.lastModifiedDateTime, Fixture.t0, "lastModifiedDateTime")
        try expect.equal(first.readState, .unread, "readState")
        try expect.equal(first.userActionState, .noInteraction, "userActionState")
        try expect.equal(first.status, .active, "status")
        try expect.that(first.changeVersion > 0, "a change version is positive, got \(first.changeVersion)")
        try expect.equal(try await store.notification(Fixture.alice, id: first.id), first, "read back by hub ID")
        try expect.equal(
            try await store.notification(Fixture.alice, id: "a-1"), first, "read back by appNotificationId")
        try expect.that(
            try await store.notification(Fixture.bob, id: first.id) == nil, "another user's feed is separate")

        let read = try await store.updateState(
            StateChange(
                key: Fixture.alice, id: first.id, readState: .read, userActionState: nil, exceptEndpoint: nil,
                now: Fixture.at(1)))
        let readVersion = try expect.unwrap(read, "updateState result").changeVersion

        var changed = Fixture.draft("a-1", priority: .high, title: "Changed", raw: nil)
        changed.groupName = nil
        let (second, createdAgain) = try await Fixture.publish(store, changed, at: Fixture.at(2), expiresIn: 600)
        try expect.that(!createdAgain, "publishing the same appNotificationId updates")
        try expect.equal(second.id, first.id, "id after an update")
        try expect.equal(second.payload, changed.payload, "payload after an update")
        try expect.equal(second.priority, .high, "priority after an update")
        try expect.equal(second.groupName, nil, "groupName after an update")
        try expect.equal(second.fallbackPolicy, nil, "fallbackPolicy after an update")
        try expect.equal(second.deliveryMode, nil, "deliveryMode after an update")
        try expect.equal(second.expirationDateTime, Fixture.at(602), "expirationDateTime after an update")
        try expect.equal(second.readState, .read, "an update keeps readState")
        try expect.equal(second.createdDateTime, Fixture.t0, "an update keeps createdDateTime")
        try expect.equal(second.lastModifiedDateTime, Fixture.at(2), "lastModifiedDateTime after an update")
        try expect.that(
            second.changeVersion > readVersion,
            "an update gets a newer version: \(second.changeVersion) after \(readVersion)")
        try expect.equal(try await store.notification(Fixture.alice, id: "a-1"), second, "read back after an update")
    }

    /// History lists a user's notifications newest first, filtered by the non-nil fields.
    public static func historyFilters(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        for (index, id) in ["h-1", "h-2", "h-3"].enumerated() {
            try await Fixture.publish(store, Fixture.draft(id), at: Fixture.at(index))
        }
        try await Fixture.publish(store, Fixture.draft("other"), for: Fixture.bob)
        _ = try await store.updateState(
            StateChange(
                key: Fixture.alice, id: "h-1", readState: .read, userActionState: .dismissed, exceptEndpoint: nil,
                now: Fixture.at(10)))
        _ = try await store.delete(Fixture.alice, appNotificationId: "h-2", at: Fixture.at(11))

        func ids(_ filter: HistoryFilter) async throws -> [String] {
            try await store.history(Fixture.alice, filter: filter).map(\.appNotificationId)
        }
        try expect.equal(try await ids(HistoryFilter()), ["h-3", "h-1"], "default history (active, newest first)")
        try expect.equal(try await ids(HistoryFilter(status: nil)), ["h-3", "h-2", "h-1"], "history of any status")
        try expect.equal(try await ids(HistoryFilter(status: .deleted)), ["h-2"], "deleted history")
        try expect.equal(try await ids(HistoryFilter(readState: .read)), ["h-1"], "read history")
        try expect.equal(try await ids(HistoryFilter(readState: .unread)), ["h-3"], "unread history")
        try expect.equal(try await ids(HistoryFilter(userActionState: .dismissed)), ["h-1"], "dismissed history")
        try expect.equal(try await ids(HistoryFilter(status: nil, limit: 2)), ["h-3", "h-2"], "history limit")
    }

    /// The feed returns changes after a version, oldest first, in pages; an update moves a
    /// notification to the end; an empty page keeps the cursor.
    public static func feedPaging(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        var versions: [Int64] = []
        for index in 1...5 {
            let (notification, _) = try await Fixture.publish(store, Fixture.draft("f-\(index)"), at: Fixture.at(index))
            versions.append(notification.changeVersion)
            try await Fixture.publish(store, Fixture.draft("noise-\(index)"), for: Fixture.bob, at: Fixture.at(index))
        }
        try expect.equal(versions, versions.sorted(), "versions grow with every publish")
        try expect.equal(Set(versions).count, 5, "versions are distinct")

        let page1 = try await store.feed(Fixture.alice, after: 0, limit: 2)
        try expect.equal(page1.changes.map(\.appNotificationId), ["f-1", "f-2"], "first page")
        try expect.that(page1.hasMore, "the first page has more")
        try expect.equal(page1.version, versions[1], "first page cursor")
        let page2 = try await store.feed(Fixture.alice, after: page1.version, limit: 2)
        try expect.equal(page2.changes.map(\.appNotificationId), ["f-3", "f-4"], "second page")
        try expect.that(page2.hasMore, "the second page has more")
        let page3 = try await store.feed(Fixture.alice, after: page2.version, limit: 2)
        try expect.equal(page3.changes.map(\.appNotificationId), ["f-5"], "last page")
        try expect.that(!page3.hasMore, "the last page has no more")
        try expect.equal(page3.version, versions[4], "last page cursor")
        let empty = try await store.feed(Fixture.alice, after: page3.version, limit: 2)
        try expect.that(empty.changes.isEmpty && !empty.hasMore, "nothing after the last change")
        try expect.equal(empty.version, page3.version, "an empty page keeps the cursor")
        let exact = try await store.feed(Fixture.alice, after: page2.version, limit: 1)
        try expect.that(!exact.hasMore, "a page that ends with the last change has no more")

        let (updated, _) = try await Fixture.publish(store, Fixture.draft("f-2", title: "Again"), at: Fixture.at(20))
        let after = try await store.feed(Fixture.alice, after: page3.version, limit: 10)
        try expect.equal(after.changes, [updated], "an update appears once, after the cursor")
        let all = try await store.feed(Fixture.alice, after: 0, limit: 100)
        try expect.equal(
            all.changes.map(\.appNotificationId), ["f-1", "f-3", "f-4", "f-5", "f-2"], "the whole feed in change order")
        let nobody = try await store.feed(FeedKey(appId: Fixture.app, userId: "carol"), after: 0, limit: 10)
        try expect.that(nobody.changes.isEmpty && nobody.version == 0, "an empty feed")
    }

    /// A state change bumps the version and taps the user's other endpoints only; a change to
    /// the stored values is a no-op.
    public static func stateChangeTapsOthers(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        for id in ["e1", "e2", "e3"] { _ = try await store.upsertEndpoint(Fixture.endpoint(id)) }
        let (published, _) = try await Fixture.publish(store, Fixture.draft("s-1"))
        try await Fixture.drain(store, at: Fixture.t0)

        let change = StateChange(
            key: Fixture.alice, id: "s-1", readState: .read, userActionState: .dismissed, exceptEndpoint: "e1",
            now: Fixture.at(5))
        let dismissed = try expect.unwrap(try await store.updateState(change), "updateState by appNotificationId")
        try expect.equal(dismissed.readState, .read, "readState")
        try expect.equal(dismissed.userActionState, .dismissed, "userActionState")
        try expect.equal(dismissed.lastModifiedDateTime, Fixture.at(5), "lastModifiedDateTime")
        try expect.that(dismissed.changeVersion > published.changeVersion, "a state change gets a newer version")
        let taps = try await Fixture.drain(store, at: Fixture.at(5))
        try expect.equal(
            Fixture.summary(taps), ["e2:shoulderTap:\(published.id)", "e3:shoulderTap:\(published.id)"], "taps")
        try expect.that(
            taps.allSatisfy { $0.delivery.changeVersion == dismissed.changeVersion }, "taps carry the version")
        try expect.equal(taps.first?.notification, dismissed, "the tap's notification")

        let same = StateChange(
            key: Fixture.alice, id: published.id, readState: .read, userActionState: nil, exceptEndpoint: nil,
            now: Fixture.at(6))
        try expect.equal(try await store.updateState(same), dismissed, "an unchanged state returns the stored one")
        try expect.equal(
            Fixture.summary(try await Fixture.claim(store, at: Fixture.at(100))), [], "no taps without a change")
        let unknown = StateChange(
            key: Fixture.alice, id: "missing", readState: .read, userActionState: nil, exceptEndpoint: nil,
            now: Fixture.at(6))
        try expect.that(try await store.updateState(unknown) == nil, "an unknown notification gives nil")
    }

    /// Deleting leaves a tombstone in the feed and taps; republishing revives it with its ID.
    public static func deleteTombstone(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        let (published, _) = try await Fixture.publish(store, Fixture.draft("d-1"))
        _ = try await store.updateState(
            StateChange(
                key: Fixture.alice, id: "d-1", readState: .read, userActionState: nil, exceptEndpoint: nil,
                now: Fixture.at(1)))
        try await Fixture.drain(store, at: Fixture.at(1))

        let tombstone = try expect.unwrap(
            try await store.delete(Fixture.alice, appNotificationId: "d-1", at: Fixture.at(2)), "delete result")
        try expect.equal(tombstone.status, .deleted, "status after delete")
        try expect.equal(tombstone.lastModifiedDateTime, Fixture.at(2), "lastModifiedDateTime after delete")
        try expect.that(tombstone.changeVersion > published.changeVersion, "a delete gets a newer version")
        try expect.equal(
            Fixture.summary(try await Fixture.drain(store, at: Fixture.at(2))), ["e1:shoulderTap:\(published.id)"],
            "delete taps")
        let feed = try await store.feed(Fixture.alice, after: published.changeVersion, limit: 10)
        try expect.equal(feed.changes, [tombstone], "the feed has the tombstone")
        try expect.equal(
            try await store.history(Fixture.alice, filter: HistoryFilter()), [], "history hides tombstones")

        let again = try await store.delete(Fixture.alice, appNotificationId: published.id, at: Fixture.at(3))
        try expect.equal(again, tombstone, "deleting a tombstone (by hub ID) returns it unchanged")
        try expect.equal(
            Fixture.summary(try await Fixture.claim(store, at: Fixture.at(3))), [], "no taps for a no-op delete")
        try expect.that(
            try await store.delete(Fixture.alice, appNotificationId: "missing", at: Fixture.at(3)) == nil, "unknown")

        let (revived, created) = try await Fixture.publish(store, Fixture.draft("d-1"), at: Fixture.at(4))
        try expect.that(created, "republishing a tombstone counts as created")
        try expect.equal(revived.id, published.id, "a revived notification keeps its ID")
        try expect.equal(revived.status, .active, "status after revival")
        try expect.equal(revived.readState, .unread, "revival resets readState")
        try expect.equal(revived.createdDateTime, Fixture.at(4), "revival sets createdDateTime")
        try expect.that(revived.changeVersion > tombstone.changeVersion, "revival gets a newer version")
    }

    /// The sweep expires due notifications (a change with taps), then purges old tombstones and
    /// old finished deliveries whose notification expired or is gone.
    public static func sweepExpiresAndPurges(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("e1"))
        let (short, _) = try await Fixture.publish(store, Fixture.draft("x-short"), expiresIn: 60)
        let (long, _) = try await Fixture.publish(store, Fixture.draft("x-long"), expiresIn: 3600)
        try await Fixture.publish(store, Fixture.draft("x-bob"), for: Fixture.bob, expiresIn: 3600)
        try await Fixture.drain(store, at: Fixture.t0)

        let changed = try await store.sweep(now: Fixture.at(60), purgeBefore: Fixture.at(-1))
        try expect.equal(changed, [Fixture.alice], "feeds changed by the sweep")
        let expired = try expect.unwrap(
            try await store.notification(Fixture.alice, id: short.id), "expired notification")
        try expect.equal(expired.status, .expired, "status after expiry")
        try expect.equal(expired.lastModifiedDateTime, Fixture.at(60), "lastModifiedDateTime after expiry")
        try expect.that(expired.changeVersion > long.changeVersion, "expiry gets a newer version")
        try expect.equal(
            try await store.notification(Fixture.alice, id: long.id)?.status, .active, "a later expiry stays active")
        let taps = try await Fixture.drain(store, at: Fixture.at(70))
        try expect.equal(Fixture.summary(taps), ["e1:shoulderTap:\(short.id)"], "expiry taps")
        try expect.equal(
            try await store.sweep(now: Fixture.at(80), purgeBefore: Fixture.at(-1)), [],
            "a second sweep changes nothing")
        try expect.equal(
            try await store.deliveryStatistics().finished["apns"]?["delivered"], 2, "finished before purge")

        _ = try await store.delete(Fixture.alice, appNotificationId: "x-long", at: Fixture.at(90))
        let purged = try await store.sweep(now: Fixture.at(100), purgeBefore: Fixture.at(85))
        try expect.equal(purged, [], "purging changes no feed")
        try expect.that(try await store.notification(Fixture.alice, id: short.id) == nil, "an old tombstone is purged")
        try expect.equal(
            try await store.notification(Fixture.alice, id: long.id)?.status, .deleted, "a recent tombstone stays")
        try expect.equal(
            try await store.notification(Fixture.bob, id: "x-bob")?.status, .active, "an active notification stays")
        let statistics = try await store.deliveryStatistics()
        // The expiry's tap (its notification purged) goes; the publish's tap announced x-long, whose
        // expiry is ahead, and stays for its receipt.
        try expect.equal(
            statistics.finished["apns"]?["delivered"] ?? 0, 1,
            "finished deliveries are purged unless their notification has not expired")
        try expect.equal(statistics.pending, 1, "the delete's tap is still pending")
    }
}
