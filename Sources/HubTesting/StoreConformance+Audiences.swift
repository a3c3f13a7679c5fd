public import HubCore

// Checks of user tags and broadcasts (`AudienceStore`): tags replaced, audiences expanded in
// chunks in user ID order, chunks leased, taken over after their lease and finished once,
// broadcasts listed and cancelled.
extension StoreConformance {
    /// Tags are replaced as a whole and read back in byte order; another user's are apart.
    public static func tagsReplaced(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try await store.replaceTags(Fixture.alice, with: ["plan:pro", "lang:fr"])
        try expect.equal(try await store.tags(Fixture.alice), ["lang:fr", "plan:pro"], "tags in byte order")
        try await store.replaceTags(Fixture.alice, with: ["plan:free"])
        try expect.equal(try await store.tags(Fixture.alice), ["plan:free"], "replaced, not added")
        try expect.equal(try await store.tags(Fixture.bob), [], "bob has none")
        try await store.replaceTags(Fixture.alice, with: [])
        try expect.equal(try await store.tags(Fixture.alice), [], "cleared")
    }

    /// "All users" is the users with an active endpoint or a feed, in byte order, in chunks after
    /// the cursor; the broadcast runs while chunks are out, and is done with its audience size once
    /// the last chunk is finished.
    public static func broadcastAllUsersInChunks(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let app = Fixture.app
        for user in ["u3", "u1", "u2"] {
            _ = try await store.upsertEndpoint(Fixture.endpoint("phone", of: FeedKey(appId: app, userId: user)))
        }
        try await Fixture.publish(store, Fixture.draft("old"), for: FeedKey(appId: app, userId: "u4"))
        try await Fixture.publish(store, Fixture.draft("old"), for: FeedKey(appId: app, userId: "u2"))
        // An inactive endpoint alone does not make a user of the audience.
        var gone = Fixture.endpoint("old-phone", of: FeedKey(appId: app, userId: "u0"))
        gone.state = .inactive
        gone.inactiveSince = Fixture.t0
        _ = try await store.upsertEndpoint(gone)
        _ = try await store.upsertEndpoint(Fixture.endpoint("phone", of: FeedKey(appId: "other.app", userId: "x")))

        let created = try await store.createBroadcast(
            Broadcast(
                appId: app, id: "b1", audience: .allUsers, draft: Fixture.draft("news"), createdDateTime: Fixture.t0),
            users: [])
        try expect.equal(created.status, .queued, "queued when created")
        try expect.equal(created.audienceSize, nil, "size unknown before the expansion")
        let until = Fixture.at(30)
        let first = try expect.unwrap(
            try await store.leaseBroadcastChunk(size: 3, owner: "a", now: Fixture.t0, leaseUntil: until), "chunk 1")
        try expect.equal(first.users, ["u1", "u2", "u3"], "the first users in ID order, each once")
        try expect.equal(first.broadcast.id, "b1", "its broadcast")
        try expect.equal(first.broadcast.draft.appNotificationId, "news", "the draft kept")
        let second = try expect.unwrap(
            try await store.leaseBroadcastChunk(size: 3, owner: "b", now: Fixture.t0, leaseUntil: until), "chunk 2")
        try expect.equal(second.users, ["u4"], "the rest, after the cursor")
        try expect.equal(
            try await store.leaseBroadcastChunk(size: 3, owner: "c", now: Fixture.t0, leaseUntil: until)?.users, nil,
            "nothing left")
        try expect.equal(
            try await store.broadcast(appId: app, id: "b1")?.status, .running, "running while chunks are out")
        try await store.finishBroadcastChunk(second, published: 1, failed: 0, at: Fixture.at(1))
        try await store.finishBroadcastChunk(first, published: 2, failed: 1, at: Fixture.at(2))
        let done = try expect.unwrap(try await store.broadcast(appId: app, id: "b1"), "read back")
        try expect.equal(done.status, .done, "done after the last chunk")
        try expect.equal(done.audienceSize, 4, "audience size")
        try expect.equal(done.published, 3, "published")
        try expect.equal(done.failed, 1, "failed")
        try expect.equal(done.completedDateTime, Fixture.at(2), "completed when the last chunk finished")
        try await store.finishBroadcastChunk(first, published: 2, failed: 1, at: Fixture.at(3))
        try expect.equal(try await store.broadcast(appId: app, id: "b1")?.published, 3, "a chunk counts once")
    }

    /// A listed audience counts each user once; a chunk whose lease ended is leased again with the
    /// same users, and its first owner's late finish counts nothing; an owner asking again (restarted
    /// under its name) gets its own chunk back at once.
    public static func broadcastChunkTakenOver(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let created = try await store.createBroadcast(
            Broadcast(
                appId: Fixture.app, id: "b2", audience: .users(count: 4), draft: Fixture.draft("n"),
                createdDateTime: Fixture.t0),
            users: ["carol", "alice", "bob", "alice"])
        try expect.equal(created.audienceSize, 3, "distinct users")
        let dead = try expect.unwrap(
            try await store.leaseBroadcastChunk(size: 2, owner: "dead", now: Fixture.t0, leaseUntil: Fixture.at(30)),
            "dead's chunk")
        try expect.equal(dead.users, ["alice", "bob"], "first chunk")
        let live = try expect.unwrap(
            try await store.leaseBroadcastChunk(
                size: 2, owner: "live", now: Fixture.at(10), leaseUntil: Fixture.at(40)),
            "live's chunk")
        try expect.equal(live.users, ["carol"], "the next chunk, not dead's")
        try expect.equal(
            try await store.leaseBroadcastChunk(
                size: 2, owner: "other", now: Fixture.at(29), leaseUntil: Fixture.at(59))?
                .users, nil, "dead's lease still runs")
        let taken = try expect.unwrap(
            try await store.leaseBroadcastChunk(
                size: 2, owner: "live", now: Fixture.at(30), leaseUntil: Fixture.at(60)),
            "taken over at the end of the lease")
        try expect.equal(taken.users, ["alice", "bob"], "the same users")
        try expect.equal(taken.owner, "live", "new owner")
        try await store.finishBroadcastChunk(dead, published: 2, failed: 0, at: Fixture.at(31))
        try expect.equal(
            try await store.broadcast(appId: Fixture.app, id: "b2")?.published, 0, "a stale finish counts nothing")
        let restarted = try expect.unwrap(
            try await store.leaseBroadcastChunk(
                size: 2, owner: "live", now: Fixture.at(31), leaseUntil: Fixture.at(61)),
            "live's own chunk back at once")
        try expect.equal(restarted.users, ["carol"], "its own chunk")
        try await store.finishBroadcastChunk(restarted, published: 1, failed: 0, at: Fixture.at(32))
        try await store.finishBroadcastChunk(taken, published: 2, failed: 0, at: Fixture.at(33))
        try expect.equal(
            try await store.leaseBroadcastChunk(
                size: 2, owner: "live", now: Fixture.at(34), leaseUntil: Fixture.at(64))?
                .users, nil, "nothing left")
        let done = try expect.unwrap(try await store.broadcast(appId: Fixture.app, id: "b2"), "read back")
        try expect.equal(done.status, .done, "done")
        try expect.equal(done.published, 3, "every user once")
        try expect.equal(done.audienceSize, 3, "size")
    }

    /// A tag audience: any of `anyOf` (when given) and all of `allOf`.
    public static func broadcastTagAudience(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let app = Fixture.app
        let tags = [
            "alice": ["fr", "pro"], "bob": ["pro"], "carol": ["fr"], "dave": ["free"], "erin": ["fr", "pro", "x"],
        ]
        for (user, list) in tags { try await store.replaceTags(FeedKey(appId: app, userId: user), with: list) }
        try await store.replaceTags(FeedKey(appId: "other.app", userId: "zed"), with: ["pro"])
        func audience(_ id: String, anyOf: [String], allOf: [String]) async throws -> [String] {
            _ = try await store.createBroadcast(
                Broadcast(
                    appId: app, id: id, audience: .tags(anyOf: anyOf, allOf: allOf), draft: Fixture.draft(id),
                    createdDateTime: Fixture.t0),
                users: [])
            var users: [String] = []
            while let chunk = try await store.leaseBroadcastChunk(
                size: 2, owner: "a", now: Fixture.t0, leaseUntil: Fixture.at(30))
            {
                users += chunk.users
                try await store.finishBroadcastChunk(chunk, published: chunk.users.count, failed: 0, at: Fixture.t0)
            }
            return users
        }
        try expect.equal(try await audience("t1", anyOf: ["pro"], allOf: ["fr"]), ["alice", "erin"], "pro and fr")
        try expect.equal(
            try await audience("t2", anyOf: ["pro", "free"], allOf: []), ["alice", "bob", "dave", "erin"], "pro or free"
        )
        try expect.equal(
            try await audience("t3", anyOf: [], allOf: ["fr", "pro"]), ["alice", "erin"], "all of fr, pro")
        try expect.equal(try await audience("t4", anyOf: ["none"], allOf: []), [], "nobody")
        try expect.equal(try await store.broadcast(appId: app, id: "t4")?.status, .done, "an empty audience is done")
        try expect.equal(try await store.broadcast(appId: app, id: "t4")?.audienceSize, 0, "of size 0")
    }

    /// Broadcasts list newest first, in pages; a cancelled one is never leased again and keeps
    /// its counts; cancelling a done one changes nothing.
    public static func broadcastListAndCancel(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        let app = Fixture.app
        for (index, id) in ["first", "second", "third"].enumerated() {
            _ = try await store.createBroadcast(
                Broadcast(
                    appId: app, id: id, audience: .users(count: 1), draft: Fixture.draft(id),
                    createdDateTime: Fixture.at(index)),
                users: ["alice"])
        }
        try expect.equal(
            try await store.broadcasts(appId: app, after: nil, limit: 2).map(\.id), ["third", "second"], "newest first")
        try expect.equal(
            try await store.broadcasts(appId: app, after: "second", limit: 2).map(\.id), ["first"], "page 2")
        try expect.equal(try await store.broadcasts(appId: "other.app", after: nil, limit: 2).map(\.id), [], "per app")
        let cancelled = try expect.unwrap(
            try await store.cancelBroadcast(appId: app, id: "first", at: Fixture.at(5)), "cancelled")
        try expect.equal(cancelled.status, .cancelled, "status")
        try expect.equal(cancelled.completedDateTime, Fixture.at(5), "completed at the cancellation")
        var leased: [String] = []
        while let chunk = try await store.leaseBroadcastChunk(
            size: 10, owner: "a", now: Fixture.at(6), leaseUntil: Fixture.at(36))
        {
            leased.append(chunk.broadcast.id)
            try await store.finishBroadcastChunk(chunk, published: 1, failed: 0, at: Fixture.at(6))
        }
        try expect.equal(leased.sorted(), ["second", "third"], "the cancelled broadcast is not expanded")
        let done = try expect.unwrap(
            try await store.cancelBroadcast(appId: app, id: "second", at: Fixture.at(7)), "done")
        try expect.equal(done.status, .done, "a done broadcast stays done")
        try expect.equal(try await store.cancelBroadcast(appId: app, id: "nope", at: Fixture.at(7)), nil, "unknown")
    }
}
