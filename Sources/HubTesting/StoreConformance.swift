import Foundation
public import HubCore

/// An expectation of the store conformance suite that did not hold.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The check that failed, e.g. `coalescing`.
    public var check: String
    /// What was expected and what the store did.
    public var message: String
    /// Where in the suite the expectation is (`file:line`).
    public var location: String

    public init(check: String, message: String, location: String) {
        self.check = check
        self.message = message
        self.location = location
    }

    public var description: String { "\(check): \(message) (\(location))" }
}

/// The behaviour every ``HubCore/Store`` implementation must share (SQLite, PostgreSQL, …).
///
/// Each check takes a fresh, empty store, calls ``HubCore/Store/migrate()`` itself, and throws a
/// ``ConformanceFailure`` describing the first expectation that did not hold. Use them one by one
/// (e.g. as arguments of a parameterized Swift Testing test over ``all``) or all at once with
/// ``run(makeStore:)``.
///
/// Times used by the checks are whole seconds, so stores with microsecond or millisecond
/// precision compare them exactly.
public enum StoreConformance {
    /// One named check.
    public struct Check: Sendable, CustomStringConvertible {
        public let name: String
        public let run: @Sendable (any Store) async throws -> Void
        public init(name: String, run: @escaping @Sendable (any Store) async throws -> Void) {
            self.name = name
            self.run = run
        }
        public var description: String { name }
    }

    /// Every check of the suite.
    public static let all: [Check] =
        [
            Check(name: "publishCreatesAndUpdates", run: publishCreatesAndUpdates),
            Check(name: "visualContentRoundTrip", run: visualContentRoundTrip),
            Check(name: "historyFilters", run: historyFilters),
            Check(name: "historyByPlatformAndTime", run: historyByPlatformAndTime),
            Check(name: "fallbackDetailsKept", run: fallbackDetailsKept),
            Check(name: "scheduledRelease", run: scheduledRelease),
            Check(name: "scheduledCancel", run: scheduledCancel),
            Check(name: "feedPaging", run: feedPaging),
            Check(name: "coalescing", run: coalescing),
            Check(name: "targetPolicyFilters", run: targetPolicyFilters),
            Check(name: "stateChangeTapsOthers", run: stateChangeTapsOthers),
            Check(name: "deleteTombstone", run: deleteTombstone),
            Check(name: "sweepExpiresAndPurges", run: sweepExpiresAndPurges),
            Check(name: "endpointLifecycle", run: endpointLifecycle),
            Check(name: "endpointReactivation", run: endpointReactivation),
            Check(name: "tokenMovesBetweenUsers", run: tokenMovesBetweenUsers),
            Check(name: "claimLeaseAndTakeover", run: claimLeaseAndTakeover),
            Check(name: "claimOrder", run: claimOrder),
            Check(name: "claimTakesOverFirst", run: claimTakesOverFirst),
            Check(name: "handOff", run: handOff),
            Check(name: "retryAfterNewerTap", run: retryAfterNewerTap),
            Check(name: "endpointGoneDeactivatesUnlessReRegistered", run: endpointGoneDeactivatesUnlessReRegistered),
            Check(name: "statistics", run: statistics),
            Check(name: "receiptsTrace", run: receiptsTrace),
            Check(name: "receiptsKeptForLifetime", run: receiptsKeptForLifetime),
            Check(name: "suspendParksUntilResumed", run: suspendParksUntilResumed),
            Check(name: "fallbackScheduled", run: fallbackScheduled),
            Check(name: "visibleNotCoalesced", run: visibleNotCoalesced),
            Check(name: "refusedIdentifiersNeverReachTheStore", run: refusedIdentifiersNeverReachTheStore),
            Check(name: "statisticsAddUp", run: statisticsAddUp),
            Check(name: "statisticsPurge", run: statisticsPurge),
            Check(name: "endpointCountsPerTransport", run: endpointCountsPerTransport),
            Check(name: "batchMixedAndDuplicates", run: batchMixedAndDuplicates),
            Check(name: "batchRetried", run: batchRetried),
            Check(name: "batchHandOff", run: batchHandOff),
            Check(name: "batchHandOffMerges", run: batchHandOffMerges),
            Check(name: "batchInterleavedFeeds", run: batchInterleavedFeeds),
            Check(name: "tagsReplaced", run: tagsReplaced),
            Check(name: "broadcastAllUsersInChunks", run: broadcastAllUsersInChunks),
            Check(name: "broadcastChunkTakenOver", run: broadcastChunkTakenOver),
            Check(name: "broadcastTagAudience", run: broadcastTagAudience),
            Check(name: "broadcastListAndCancel", run: broadcastListAndCancel),
            Check(name: "endpointLimit", run: endpointLimit),
            Check(name: "endpointPages", run: endpointPages),
            Check(name: "releaseUncounted", run: releaseUncounted),
            Check(name: "userDataExportedAndErased", run: userDataExportedAndErased),
            Check(name: "badgeCounts", run: badgeCounts),
            Check(name: "handOffKeepsCreationOrder", run: handOffKeepsCreationOrder),
            Check(name: "batchKeepsCreationOrder", run: batchKeepsCreationOrder),
            Check(name: "manyEndpointsInOnePlan", run: manyEndpointsInOnePlan),
        ] + webhookChecks

    /// The checks of each protocol ``Store`` is composed of, by name: what a store written one
    /// protocol at a time can pass so far (most checks also publish through `FeedStore`). Every
    /// check of ``all`` is in exactly one group, that of the protocol whose rules it checks.
    public static let groups: [(protocol: String, checks: [String])] = [
        (
            "FeedStore",
            [
                "publishCreatesAndUpdates", "visualContentRoundTrip", "fallbackDetailsKept", "scheduledRelease",
                "scheduledCancel", "coalescing", "targetPolicyFilters", "stateChangeTapsOthers", "deleteTombstone",
                "sweepExpiresAndPurges", "fallbackScheduled", "visibleNotCoalesced",
                "refusedIdentifiersNeverReachTheStore", "batchMixedAndDuplicates", "batchRetried", "batchHandOff",
                "batchHandOffMerges", "batchInterleavedFeeds", "badgeCounts",
            ]
        ),
        ("FeedReader", ["historyFilters", "historyByPlatformAndTime", "feedPaging"]),
        (
            "EndpointStore",
            ["endpointLifecycle", "endpointReactivation", "tokenMovesBetweenUsers", "endpointLimit", "endpointPages"]
        ),
        (
            "OutboxStore",
            [
                "claimLeaseAndTakeover", "claimOrder", "handOff", "retryAfterNewerTap",
                "endpointGoneDeactivatesUnlessReRegistered", "suspendParksUntilResumed", "releaseUncounted",
                "handOffKeepsCreationOrder", "batchKeepsCreationOrder", "claimTakesOverFirst", "manyEndpointsInOnePlan",
            ]
        ),
        ("DeliveryReportStore", ["statistics", "receiptsTrace", "receiptsKeptForLifetime"]),
        ("StatisticsStore", ["statisticsAddUp", "statisticsPurge", "endpointCountsPerTransport"]),
        (
            "AudienceStore",
            [
                "tagsReplaced", "broadcastAllUsersInChunks", "broadcastChunkTakenOver", "broadcastTagAudience",
                "broadcastListAndCancel",
            ]
        ),
        ("UserDataStore", ["userDataExportedAndErased"]),
        ("WebhookStore", ["webhookEventsInOrderPerUser", "webhookEventsWithOutcomes"]),
    ]

    /// The checks of one protocol's group (see ``groups``), in the order of ``all``.
    /// - Parameter name: the protocol's name, as ``groups`` spells it.
    public static func checks(of name: String) -> [Check] {
        let names = Set(groups.first { $0.protocol == name }?.checks ?? [])
        return all.filter { names.contains($0.name) }
    }

    /// Runs every check, each on a store from `makeStore`, and throws one ``ConformanceFailure``
    /// listing all checks that failed.
    public static func run(makeStore: @Sendable () async throws -> any Store) async throws {
        var failures: [String] = []
        for check in all {
            do {
                try await check.run(try await makeStore())
            } catch {
                failures.append("\(error)")
            }
        }
        guard failures.isEmpty else {
            throw ConformanceFailure(
                check: "StoreConformance",
                message: "\(failures.count) check(s) failed:\n" + failures.joined(separator: "\n"),
                location: "run(makeStore:)")
        }
    }
}

// MARK: - Expectations

/// Expectations that throw ``ConformanceFailure`` naming their check.
struct Expect {
    let check: String

    init(_ check: String = #function) {
        self.check = String(check.prefix { $0 != "(" })
    }

    func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> ConformanceFailure {
        ConformanceFailure(check: check, message: message, location: "\(file):\(line)")
    }

    func that(
        _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
    ) throws {
        if !condition { throw fail(message(), file: file, line: line) }
    }

    func equal<Value: Equatable>(
        _ actual: Value, _ expected: Value, _ what: String, file: StaticString = #fileID, line: UInt = #line
    ) throws {
        if actual != expected {
            throw fail("\(what): expected \(expected), got \(actual)", file: file, line: line)
        }
    }

    func unwrap<Value>(
        _ value: Value?, _ what: String, file: StaticString = #fileID, line: UInt = #line
    ) throws -> Value {
        guard let value else { throw fail("\(what): expected a value, got nil", file: file, line: line) }
        return value
    }
}

// MARK: - Fixtures

/// Values and steps the checks share.
enum Fixture {
    static let app = "notes.contoso.com"
    static let alice = FeedKey(appId: app, userId: "alice")
    static let bob = FeedKey(appId: app, userId: "bob")
    /// The checks' "now": a whole second.
    static let t0 = Date(timeIntervalSince1970: 1_750_000_000)

    static func at(_ seconds: Int) -> Date { t0.addingTimeInterval(TimeInterval(seconds)) }

    static func endpoint(
        _ id: String, of key: FeedKey = alice, platform: Platform = .ios, transport: TransportID = .apns,
        token: String? = nil, registeredAt: Date = t0
    ) -> Endpoint {
        Endpoint(
            id: id, appId: key.appId, userId: key.userId, platform: platform,
            platformAppId: platform == .ios ? "com.contoso.notes" : "contoso.notes", transport: transport,
            token: token ?? (transport == .polling ? nil : "token-\(key.userId)-\(id)"),
            attributes: transport == .apns ? ["environment": "production"] : [:], appDisplayName: "Contoso Notes",
            registeredAt: registeredAt)
    }

    static func draft(
        _ appNotificationId: String, priority: NotificationPriority = .none, title: String? = "Hello",
        raw: String? = "{\"n\":1}", platforms: [Platform] = [], fallback: Int? = nil, mode: DeliveryMode? = nil
    ) -> NotificationDraft {
        NotificationDraft(
            appNotificationId: appNotificationId, groupName: "group", priority: priority,
            payload: NotificationPayload(
                rawContent: raw, visualContent: title.map { VisualContent(title: $0, body: "Body") }),
            targetPolicy: TargetPolicy(platformTypes: platforms), displayTimeToLive: 60,
            fallbackPolicy: fallback.map { FallbackPolicy(timeoutSeconds: $0) }, deliveryMode: mode)
    }

    /// Publishes `draft` for `key` at `now`, expiring a day later, with a new ID derived from its
    /// `appNotificationId` and the time.
    @discardableResult
    static func publish(
        _ store: any Store, _ draft: NotificationDraft, for key: FeedKey = alice, at now: Date = t0,
        mode: DeliveryMode = .shoulderTap, expiresIn: TimeInterval = 86_400
    ) async throws -> (notification: UserNotification, created: Bool) {
        let result = try await publishHandingOff(store, draft, for: key, at: now, mode: mode, expiresIn: expiresIn)
        return (result.notification, result.created)
    }

    /// ``publish(_:_:for:at:mode:expiresIn:)`` with a hand-off; returns the store's whole result.
    static func publishHandingOff(
        _ store: any Store, _ draft: NotificationDraft, for key: FeedKey = alice, at now: Date = t0,
        mode: DeliveryMode = .shoulderTap, expiresIn: TimeInterval = 86_400, handOff: HandOff? = nil
    ) async throws -> PublishResult {
        let newId = "\(key.userId)-\(draft.appNotificationId)-\(Int(now.timeIntervalSince(t0)))"
        return try await store.publish(
            PublishRequest(
                key: key, draft: draft, newId: newId, expirationDateTime: now.addingTimeInterval(expiresIn),
                deliveryMode: mode, now: now, handOff: handOff))
    }

    /// Claims everything due at `now`, sorted by endpoint, then kind, then ID.
    static func claim(
        _ store: any Store, at now: Date, owner: String = "worker-a", lease: TimeInterval = 30, limit: Int = 100
    ) async throws -> [ClaimedDelivery] {
        try await store.claimDeliveries(limit: limit, now: now, owner: owner, leaseUntil: now.addingTimeInterval(lease))
            .sorted {
                ($0.delivery.endpointId, $0.delivery.kind.rawValue, $0.delivery.id)
                    < ($1.delivery.endpointId, $1.delivery.kind.rawValue, $1.delivery.id)
            }
    }

    /// Claims and finishes as delivered everything due at `now`; returns what it claimed.
    @discardableResult
    static func drain(_ store: any Store, at now: Date) async throws -> [ClaimedDelivery] {
        let claimed = try await claim(store, at: now, owner: "drain")
        for item in claimed {
            try await store.finishDelivery(
                id: item.delivery.id, result: .delivered, detail: nil, goneSince: nil, at: now)
        }
        return claimed
    }

    /// A short description of claimed deliveries for messages: `endpoint:kind:notification`.
    static func summary(_ claimed: [ClaimedDelivery]) -> [String] {
        claimed.map { "\($0.delivery.endpointId):\($0.delivery.kind):\($0.delivery.notificationId ?? "-")" }
    }
}
