public import struct Foundation.Date

/// Wraps every call of a ``Store`` (deadlines, fault injection in tests, tracing): the
/// interceptor runs each call, named, and decides what happens around it.
public protocol StoreInterceptor: Sendable {
    /// Runs `call` (the named store method on the wrapped store), or fails instead.
    func intercept<T: Sendable>(_ name: String, _ call: @escaping @Sendable () async throws -> T) async throws -> T
}

/// A ``Store`` whose every call goes through an ``StoreInterceptor``.
public struct InterceptedStore<Interceptor: StoreInterceptor>: Store {
    public let base: any Store
    public let interceptor: Interceptor

    public init(_ base: any Store, _ interceptor: Interceptor) {
        self.base = base
        self.interceptor = interceptor
    }

    func call<T: Sendable>(_ name: String, _ body: @escaping @Sendable (any Store) async throws -> T) async throws -> T
    {
        let base = self.base
        return try await interceptor.intercept(name) { try await body(base) }
    }

    public func migrate() async throws { try await base.migrate() }

    public func publish(_ request: PublishRequest) async throws -> PublishResult {
        try await call("publish") { try await $0.publish(request) }
    }

    public func publish(batch requests: [PublishRequest]) async throws -> [PublishResult] {
        try await call("publishBatch") { try await $0.publish(batch: requests) }
    }

    public var writesOneAtATime: Bool { base.writesOneAtATime }

    public func delete(
        _ key: FeedKey, appNotificationId: String, at now: Date, planner: DeliveryPlanner
    ) async throws -> UserNotification? {
        try await call("delete") {
            try await $0.delete(key, appNotificationId: appNotificationId, at: now, planner: planner)
        }
    }

    public func updateState(_ change: StateChange) async throws -> UserNotification? {
        try await call("updateState") { try await $0.updateState(change) }
    }

    public func notification(_ key: FeedKey, id: String) async throws -> UserNotification? {
        try await call("notification") { try await $0.notification(key, id: id) }
    }

    public func history(_ key: FeedKey, filter: HistoryFilter) async throws -> [UserNotification] {
        try await call("history") { try await $0.history(key, filter: filter) }
    }

    public func feed(_ key: FeedKey, after version: Int64, limit: Int) async throws -> FeedPage {
        try await call("feed") { try await $0.feed(key, after: version, limit: limit) }
    }

    public func sweep(now: Date, purgeBefore: Date, planner: DeliveryPlanner) async throws -> Set<FeedKey> {
        try await call("sweep") { try await $0.sweep(now: now, purgeBefore: purgeBefore, planner: planner) }
    }

    public func nextScheduledRelease() async throws -> Date? {
        try await call("nextScheduledRelease") { try await $0.nextScheduledRelease() }
    }

    public func badgeCount(_ key: FeedKey, platform: Platform) async throws -> Int {
        try await call("badgeCount") { try await $0.badgeCount(key, platform: platform) }
    }

    public func deliveryTrace(_ key: FeedKey, id: String) async throws -> NotificationTrace? {
        try await call("deliveryTrace") { try await $0.deliveryTrace(key, id: id) }
    }

    public func upsertEndpoint(_ endpoint: Endpoint, limit: EndpointLimit) async throws -> Endpoint {
        try await call("upsertEndpoint") { try await $0.upsertEndpoint(endpoint, limit: limit) }
    }

    public func endpoints(
        appId: String, state: EndpointState?, after: EndpointPosition?, limit: Int
    ) async throws -> [Endpoint] {
        try await call("endpoints") { try await $0.endpoints(appId: appId, state: state, after: after, limit: limit) }
    }

    public func endpoint(_ key: FeedKey, id: String) async throws -> Endpoint? {
        try await call("endpoint") { try await $0.endpoint(key, id: id) }
    }

    public func endpoints(_ key: FeedKey) async throws -> [Endpoint] {
        try await call("endpoints") { try await $0.endpoints(key) }
    }

    public func endpoints(appId: String, state: EndpointState?) async throws -> [Endpoint] {
        try await call("endpoints") { try await $0.endpoints(appId: appId, state: state) }
    }

    public func deleteEndpoint(_ key: FeedKey, id: String) async throws -> Bool {
        try await call("deleteEndpoint") { try await $0.deleteEndpoint(key, id: id) }
    }

    public func touchEndpoint(_ key: FeedKey, id: String, syncedAt: Date) async throws {
        try await call("touchEndpoint") { try await $0.touchEndpoint(key, id: id, syncedAt: syncedAt) }
    }

    public func claimDeliveries(
        _ lane: OutboxLane, limit: Int, now: Date, owner: String, leaseUntil: Date
    ) async throws -> [ClaimedDelivery] {
        try await call("claimDeliveries") {
            try await $0.claimDeliveries(lane, limit: limit, now: now, owner: owner, leaseUntil: leaseUntil)
        }
    }

    public func renewLeases(_ ids: [Int64], owner: String, until: Date) async throws {
        try await call("renewLeases") { try await $0.renewLeases(ids, owner: owner, until: until) }
    }

    public func recordOutcomes(_ outcomes: [OutboxOutcome]) async throws {
        try await call("recordOutcomes") { try await $0.recordOutcomes(outcomes) }
    }

    @discardableResult
    public func resumeSuspended(at now: Date) async throws -> Int {
        try await call("resumeSuspended") { try await $0.resumeSuspended(at: now) }
    }

    public func releaseLeases(owner: String) async throws {
        try await call("releaseLeases") { try await $0.releaseLeases(owner: owner) }
    }

    public func nextDueDate() async throws -> Date? {
        try await call("nextDueDate") { try await $0.nextDueDate() }
    }

    public func deliveryStatistics() async throws -> DeliveryStatistics {
        try await call("deliveryStatistics") { try await $0.deliveryStatistics() }
    }

    public func outboxDepth() async throws -> DeliveryStatistics {
        try await call("outboxDepth") { try await $0.outboxDepth() }
    }

    public func addStatistics(_ deltas: [StatisticsDelta]) async throws {
        try await call("addStatistics") { try await $0.addStatistics(deltas) }
    }

    public func statistics(
        appId: String, resolution: StatisticsResolution, from: Date, to: Date
    ) async throws -> [StatisticsBucket] {
        try await call("statistics") {
            try await $0.statistics(appId: appId, resolution: resolution, from: from, to: to)
        }
    }

    public func endpointCounts(appId: String) async throws -> [EndpointCounts] {
        try await call("endpointCounts") { try await $0.endpointCounts(appId: appId) }
    }

    public func replaceTags(_ key: FeedKey, with tags: [String]) async throws {
        try await call("replaceTags") { try await $0.replaceTags(key, with: tags) }
    }

    public func tags(_ key: FeedKey) async throws -> [String] {
        try await call("tags") { try await $0.tags(key) }
    }

    public func createBroadcast(_ broadcast: Broadcast, users: [String]) async throws -> Broadcast {
        try await call("createBroadcast") { try await $0.createBroadcast(broadcast, users: users) }
    }

    public func broadcast(appId: String, id: String) async throws -> Broadcast? {
        try await call("broadcast") { try await $0.broadcast(appId: appId, id: id) }
    }

    public func broadcasts(appId: String, after: String?, limit: Int) async throws -> [Broadcast] {
        try await call("broadcasts") { try await $0.broadcasts(appId: appId, after: after, limit: limit) }
    }

    public func cancelBroadcast(appId: String, id: String, at now: Date) async throws -> Broadcast? {
        try await call("cancelBroadcast") { try await $0.cancelBroadcast(appId: appId, id: id, at: now) }
    }

    public func leaseBroadcastChunk(
        size: Int, owner: String, now: Date, leaseUntil: Date
    ) async throws -> BroadcastChunk? {
        try await call("leaseBroadcastChunk") {
            try await $0.leaseBroadcastChunk(size: size, owner: owner, now: now, leaseUntil: leaseUntil)
        }
    }

    public func finishBroadcastChunk(_ chunk: BroadcastChunk, published: Int, failed: Int, at now: Date) async throws {
        try await call("finishBroadcastChunk") {
            try await $0.finishBroadcastChunk(chunk, published: published, failed: failed, at: now)
        }
    }
}
