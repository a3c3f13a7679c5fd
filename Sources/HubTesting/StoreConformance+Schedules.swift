public import HubCore

// Checks of scheduled notifications: held until their time, released by the sweep, cancelled by
// a deletion.
extension StoreConformance {
    /// A publish with a `scheduledDateTime` ahead stores a `scheduled` notification and enqueues
    /// nothing; a republish before its time updates it; the sweep at its time releases it (active,
    /// a new version, the deliveries of a publish); `nextScheduledRelease` names the earliest.
    public static func scheduledRelease(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("phone"))
        var draft = Fixture.draft("later")
        draft.scheduledDateTime = Fixture.at(60)
        let (scheduled, created) = try await Fixture.publish(store, draft, mode: .visible)
        try expect.that(created, "a scheduled publish creates")
        try expect.equal(scheduled.status, .scheduled, "status before its time")
        try expect.equal(scheduled.scheduledDateTime, Fixture.at(60), "scheduledDateTime")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(0)).count, 0, "nothing enqueued before its time")
        try expect.equal(try await store.nextScheduledRelease(), Fixture.at(60), "the next release")

        draft.scheduledDateTime = Fixture.at(90)
        draft.payload.visualContent = VisualContent(title: "Changed")
        let (moved, createdAgain) = try await Fixture.publish(store, draft, at: Fixture.at(10), mode: .visible)
        try expect.that(!createdAgain, "a republish before its time updates")
        try expect.equal(moved.id, scheduled.id, "id kept")
        try expect.equal(moved.status, .scheduled, "still scheduled")
        try expect.equal(try await store.nextScheduledRelease(), Fixture.at(90), "the release moved")

        try expect.equal(try await store.sweep(now: Fixture.at(89), purgeBefore: Fixture.t0), [], "not yet")
        try expect.equal(try await store.notification(Fixture.alice, id: "later")?.status, .scheduled, "held")
        let changed = try await store.sweep(now: Fixture.at(90), purgeBefore: Fixture.t0)
        try expect.equal(changed, [Fixture.alice], "the release changes the feed")
        let released = try expect.unwrap(try await store.notification(Fixture.alice, id: "later"), "released")
        try expect.equal(released.status, .active, "active at its time")
        try expect.that(released.changeVersion > moved.changeVersion, "a new version, after the feed's cursor")
        try expect.equal(released.payload.visualContent?.title, "Changed", "the republished content")
        let claimed = try await Fixture.claim(store, at: Fixture.at(90))
        try expect.equal(claimed.map(\.delivery.kind), [.visible], "delivered in the publish's mode")
        try expect.equal(try await store.nextScheduledRelease(), nil, "nothing left to release")
        try expect.equal(try await store.sweep(now: Fixture.at(91), purgeBefore: Fixture.t0), [], "released once")
    }

    /// Deleting a scheduled notification cancels it: a tombstone whose deletion precedes its time,
    /// no deliveries, and no release.
    public static func scheduledCancel(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("phone"))
        var draft = Fixture.draft("never")
        draft.scheduledDateTime = Fixture.at(100)
        try await Fixture.publish(store, draft)
        let cancelled = try expect.unwrap(
            try await store.delete(Fixture.alice, appNotificationId: "never", at: Fixture.at(10)), "deleted")
        try expect.equal(cancelled.status, .deleted, "a tombstone")
        try expect.that(NotificationView.cancelledBeforeRelease(cancelled), "cancelled before its time")
        try expect.equal(try await Fixture.claim(store, at: Fixture.at(10)).count, 0, "no taps for a cancellation")
        try expect.equal(try await store.nextScheduledRelease(), nil, "nothing to release")
        try expect.equal(try await store.sweep(now: Fixture.at(100), purgeBefore: Fixture.t0), [], "no release")
        try expect.equal(
            try await store.notification(Fixture.alice, id: "never")?.status, .deleted, "stays deleted")
    }
}
