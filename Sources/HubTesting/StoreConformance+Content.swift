public import HubCore

// Checks that everything a publish's visual content carries survives the store.
extension StoreConformance {
    /// A payload with every `visualContent` field (localisation keys and arguments with awkward
    /// text, badge, tile) reads back equal by ID, in the history and in the feed; a republish
    /// without them reads back without them.
    public static func visualContentRoundTrip(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        var draft = Fixture.draft("v-1", raw: nil, mode: .visible)
        draft.payload.visualContent = VisualContent(
            title: "Título \"1\" / 🙂", body: "e\u{301}\n\tbody", titleLocKey: "TITLE_KEY",
            titleLocArgs: ["a/b", "\"q\"", "", "漢字"], bodyLocKey: "BODY.KEY", bodyLocArgs: [], badge: 2_147_483_647,
            tile: false)
        let (first, _) = try await Fixture.publish(store, draft)
        try expect.equal(first.payload, draft.payload, "payload as published")
        try expect.equal(try await store.notification(Fixture.alice, id: first.id)?.payload, draft.payload, "by ID")
        try expect.equal(
            try await store.history(Fixture.alice, filter: HistoryFilter()).first?.payload, draft.payload, "history")
        try expect.equal(
            try await store.feed(Fixture.alice, after: 0, limit: 10).changes.first?.payload,
            draft.payload, "feed")

        var plain = Fixture.draft("v-1", raw: nil)
        plain.payload.visualContent = VisualContent(title: "Plain", badge: 0, tile: true)
        _ = try await Fixture.publish(store, plain, at: Fixture.at(1))
        try expect.equal(
            try await store.notification(Fixture.alice, id: first.id)?.payload, plain.payload,
            "a republish replaces every field")
    }
}
