import Foundation
public import HubCore

// Checks of a user's export and erasure (`UserDataStore`), and the fixture that puts a user in
// every table, which the stores' own tests erase and then search their schemas for the user ID.
extension StoreConformance {
    /// The user whose data the checks export and erase: an ID no fixture value contains otherwise.
    public static let erasureSubject = FeedKey(appId: "notes.contoso.com", userId: "erasure-subject-7q")
    /// Another user of the same app, after the subject in byte order, whose data must stay.
    public static let erasureNeighbour = FeedKey(appId: "notes.contoso.com", userId: "neighbour-9z")

    /// Puts `subject` in every table a store has for users: notifications (active, read from an
    /// endpoint, deleted), endpoints (one gone inactive), delivered, retried and pending
    /// deliveries, tags, a `users` broadcast that lists it with a chunk being published that
    /// holds it (the broadcast's cursor at it) — and `neighbour` beside it in each.
    /// - Parameters:
    ///   - store: a migrated store.
    ///   - subject: the user to erase (sorts before `neighbour`).
    ///   - neighbour: the user who stays.
    public static func populateUserData(
        _ store: any Store, subject: FeedKey = erasureSubject, neighbour: FeedKey = erasureNeighbour
    ) async throws {
        for key in [subject, neighbour] {
            _ = try await store.upsertEndpoint(Fixture.endpoint("phone", of: key))
            _ = try await store.upsertEndpoint(
                Fixture.endpoint("tablet", of: key, platform: .android, transport: .fcm))
            let (kept, _) = try await Fixture.publish(store, Fixture.draft("kept"), for: key, mode: .visible)
            try await Fixture.publish(store, Fixture.draft("dropped"), for: key, at: Fixture.at(1))
            _ = try await store.delete(key, appNotificationId: "dropped", at: Fixture.at(2))
            _ = try await store.updateState(
                StateChange(
                    key: key, id: kept.id, readState: .read, userActionState: .dismissed, exceptEndpoint: "phone",
                    now: Fixture.at(3)))
            try await store.replaceTags(key, with: ["plan:pro", "lang:fr"])
        }
        // Outcomes: delivered with a message ID, retried, gone; the rest stays pending.
        let claimed = try await Fixture.claim(store, at: Fixture.at(4), limit: 100)
        var outcomes: [OutboxOutcome] = []
        for key in [subject, neighbour] {
            // The last of each user's stays leased (in flight).
            for (index, item) in claimed.filter({ $0.delivery.userId == key.userId }).dropLast().enumerated() {
                switch index % 3 {
                case 0:
                    outcomes.append(
                        OutboxOutcome(
                            id: item.delivery.id, .finish(.delivered, detail: nil, goneSince: nil), at: Fixture.at(5),
                            providerMessageId: "msg-\(item.delivery.id)"))
                case 1:
                    outcomes.append(
                        OutboxOutcome(
                            id: item.delivery.id, .retry(dueAt: Fixture.at(60), error: "503"), at: Fixture.at(5)))
                default:
                    outcomes.append(
                        OutboxOutcome(
                            id: item.delivery.id, .finish(.endpointGone, detail: "Unregistered", goneSince: nil),
                            at: Fixture.at(5)))
                }
            }
        }
        try await store.recordOutcomes(outcomes)
        _ = try await store.createBroadcast(
            Broadcast(
                appId: subject.appId, id: "listed", audience: .users(count: 2), draft: Fixture.draft("news"),
                createdDateTime: Fixture.at(6)),
            users: [subject.userId, neighbour.userId])
        // One user per chunk: the first holds the subject, and the cursor stops at it.
        _ = try await store.leaseBroadcastChunk(
            size: 1, owner: "expander", now: Fixture.at(7), leaseUntil: Fixture.at(600))
    }

    /// The export holds every notification (tombstones too) with who read it, the endpoints with
    /// their tokens, the tags, every delivery and the broadcasts that list the user; the erasure
    /// removes all of it in one go and says how much, leaves the neighbour's data as it was, takes
    /// the user out of the broadcast's chunk and cursor so the broadcast reaches the neighbour
    /// next, and a second erasure finds nothing.
    public static func userDataExportedAndErased(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let (subject, neighbour) = (erasureSubject, erasureNeighbour)
        try expect.that(try await store.exportUser(subject).isEmpty, "nothing held before")
        try await populateUserData(store)

        let record = try await store.exportUser(subject)
        try expect.equal(
            record.notifications.map(\.notification.appNotificationId), ["dropped", "kept"],
            "notifications, newest first")
        try expect.equal(
            record.notifications.map(\.notification.status), [.deleted, .active], "the tombstone is exported too")
        let kept = try expect.unwrap(record.notifications.last, "the kept one")
        try expect.equal(kept.readBy, "phone", "who read it")
        try expect.equal(kept.dismissedAt, Fixture.at(3), "when it was dismissed")
        try expect.equal(kept.deliveries, [], "deliveries are the record's, not each trace's")
        try expect.equal(record.endpoints.map(\.id), ["phone", "tablet"], "endpoints by ID")
        try expect.equal(
            record.endpoints.first?.token, "token-\(subject.userId)-phone",
            "the store gives the token; the API masks it")
        try expect.equal(record.tags, ["lang:fr", "plan:pro"], "tags")
        try expect.that(
            record.deliveries.allSatisfy { $0.delivery.userId == subject.userId }, "only the user's deliveries")
        try expect.that(record.deliveries.count >= 4, "taps and visible deliveries: \(record.deliveries.count)")
        try expect.that(
            record.deliveries.contains { $0.result == .delivered && $0.providerMessageId != nil },
            "a delivered one with its message ID")
        try expect.that(record.deliveries.contains { $0.result == nil }, "a pending one")
        try expect.equal(
            record.deliveries.map(\.delivery.id), record.deliveries.map(\.delivery.id).sorted(), "in outbox order")
        try expect.equal(record.broadcasts, ["listed"], "the broadcast that lists the user")
        let traces = record.traces
        try expect.equal(traces.last?.deliveries.count, record.deliveries.count, "traces take the record's deliveries")

        let neighbourBefore = try await store.exportUser(neighbour)
        let erased = try await store.eraseUser(subject, at: Fixture.at(8))
        try expect.equal(
            erased,
            UserErasure(
                notifications: 2, endpoints: 2, tags: 2, deliveries: record.deliveries.count, broadcasts: 1),
            "the counts")
        try expect.that(try await store.exportUser(subject).isEmpty, "nothing held after")
        try expect.equal(try await store.exportUser(neighbour), neighbourBefore, "the neighbour's data as it was")
        try expect.equal(try await store.endpoints(subject), [], "no endpoint")
        try expect.equal(try await store.feed(subject, after: 0, limit: 10).changes, [], "an empty feed")
        let claimedAfter = try await Fixture.claim(store, at: Fixture.at(3_600), limit: 100)
        try expect.that(
            !claimedAfter.contains { $0.delivery.userId == subject.userId }, "no delivery of the user is claimed")

        // The subject's chunk is gone with it; the cursor moved before it, so the neighbour is next.
        let next = try expect.unwrap(
            try await store.leaseBroadcastChunk(
                size: 5, owner: "expander-2", now: Fixture.at(9), leaseUntil: Fixture.at(600)),
            "the broadcast goes on")
        try expect.equal(next.users, [neighbour.userId], "the neighbour, once, and not the erased user")
        try expect.equal(try await store.eraseUser(subject, at: Fixture.at(10)), UserErasure(), "nothing left to erase")
    }
}
