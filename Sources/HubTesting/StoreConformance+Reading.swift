public import HubCore

// Checks of what reads serve: a device's history by platform, expiry exact at read time, and the
// fallback policy's details kept whole.
extension StoreConformance {
    /// `HistoryFilter.platform` keeps the notifications targeting that platform (an empty target
    /// list targets all); `HistoryFilter.asOf` counts an active notification past its expiration
    /// as expired before any sweep.
    public static func historyByPlatformAndTime(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        try await Fixture.publish(store, Fixture.draft("ios-only", platforms: [.ios]), at: Fixture.at(0))
        try await Fixture.publish(store, Fixture.draft("android-only", platforms: [.android]), at: Fixture.at(1))
        try await Fixture.publish(store, Fixture.draft("both", platforms: [.ios, .android]), at: Fixture.at(2))
        try await Fixture.publish(store, Fixture.draft("everywhere"), at: Fixture.at(3))
        try await Fixture.publish(store, Fixture.draft("short"), at: Fixture.at(4), expiresIn: 10)

        func ids(_ filter: HistoryFilter) async throws -> [String] {
            try await store.history(Fixture.alice, filter: filter).map(\.appNotificationId)
        }
        try expect.equal(
            try await ids(HistoryFilter(platform: .android)), ["short", "everywhere", "both", "android-only"],
            "an Android device's history")
        try expect.equal(
            try await ids(HistoryFilter(platform: .windows)), ["short", "everywhere"], "a Windows device's history")
        try expect.equal(
            try await ids(HistoryFilter(platform: .ios, asOf: Fixture.at(13))),
            ["short", "everywhere", "both", "ios-only"], "before the expiration")
        try expect.equal(
            try await ids(HistoryFilter(platform: .ios, asOf: Fixture.at(14))), ["everywhere", "both", "ios-only"],
            "at the expiration, unswept: no longer active")
        try expect.equal(
            try await ids(HistoryFilter(status: .expired, asOf: Fixture.at(14))), ["short"],
            "at the expiration, unswept: expired")
        try expect.equal(
            try await ids(HistoryFilter(status: .expired)), [], "without a read time, the stored states count")
    }

    /// A fallback policy with platforms and content of its own reads back whole, from reads and
    /// from claims.
    public static func fallbackDetailsKept(_ store: any Store) async throws {
        let expect = Expect()
        try await store.migrate()
        _ = try await store.upsertEndpoint(Fixture.endpoint("phone"))
        var draft = Fixture.draft("raw-only", priority: .high, title: nil, platforms: [.ios])
        let policy = FallbackPolicy(
            timeoutSeconds: 90, platformTypes: [.ios], visualContent: VisualContent(title: "Open the app", body: "é 🎉"))
        draft.fallbackPolicy = policy
        let (published, _) = try await Fixture.publish(store, draft)
        try expect.equal(published.fallbackPolicy, policy, "returned by the publish")
        try expect.equal(
            try await store.notification(Fixture.alice, id: "raw-only")?.fallbackPolicy, policy, "read back")
        try expect.equal(
            try await store.history(Fixture.alice, filter: HistoryFilter()).first?.fallbackPolicy, policy,
            "in history")
        let fallbacks = try await Fixture.claim(store, at: Fixture.at(90)).filter { $0.delivery.kind == .fallback }
        try expect.equal(fallbacks.count, 1, "one fallback due after 90 s")
        try expect.equal(fallbacks.first?.notification?.fallbackPolicy, policy, "claimed with its notification")

        draft.fallbackPolicy = FallbackPolicy(timeoutSeconds: 60)
        let (plain, _) = try await Fixture.publish(store, draft, at: Fixture.at(100))
        try expect.equal(plain.fallbackPolicy, FallbackPolicy(timeoutSeconds: 60), "a plain policy replaces it")
        try expect.equal(
            try await store.notification(Fixture.alice, id: "raw-only")?.fallbackPolicy,
            FallbackPolicy(timeoutSeconds: 60), "and reads back plain")
    }
}
