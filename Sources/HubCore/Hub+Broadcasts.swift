import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// How this instance expands broadcasts (``Hub/expandBroadcastChunk()``).
public struct BroadcastConfiguration: Sendable {
    /// Whether this instance leases and publishes broadcast chunks.
    public var enabled: Bool = true
    /// Users per chunk: what one chunk's publish holds in memory, and what a killed instance
    /// publishes twice at most.
    public var chunkSize: Int = 500
    /// Users a chunk publishes per ``Hub/publish(app:batch:)`` (one write transaction on SQLite):
    /// a chunk is written in parts of this size, one after another, and a single publish that
    /// arrives meanwhile waits for one part at most, not for the chunk. Only for a store that
    /// writes one transaction at a time (``FeedStore/writesOneAtATime``); on PostgreSQL a chunk
    /// is one call.
    public var usersPerWrite: Int = 100
    /// How long a chunk stays leased to its instance; a chunk whose lease ended is taken over.
    public var lease: Duration = .seconds(30)
    /// How often an idle expander looks for broadcasts created on other instances (a broadcast
    /// created on this one wakes it at once).
    public var pollInterval: Duration = .seconds(1)
    /// Chunks this instance publishes at once, each by an expander of its own. The first leases
    /// its chunks under ``HubConfiguration/instanceID``, the others under that ID followed by
    /// `/2`, `/3`, …: an instance restarted with the same ID and count takes each one's unfinished
    /// chunk back at once.
    public var concurrentChunks: Int = 1
    /// The most users a second this instance's expanders publish, together (a chunk, then a pause
    /// of its share of the second); `nil`: as fast as the lanes take the deliveries.
    public var maxUsersPerSecond: Int? = nil

    public init() {}
}

extension Hub {
    // MARK: Tags

    /// Replaces the user's tags (at most ``BroadcastAudience/maxTags``, each an ``Identifier``;
    /// duplicates count once).
    /// - Returns: the tags as stored, in byte order.
    /// - Throws: ``HubError`` `invalid-request` naming `tags[i]` or `tags`; `not-found` for an unknown app.
    @discardableResult
    public func replaceTags(app appID: String, user userID: String, tags: [String]) async throws -> [String] {
        let key = try feedKey(appID, userID)
        var errors = Self.tagErrors(tags, field: "tags")
        if tags.count > BroadcastAudience.maxTags {
            errors.append(
                .init(field: "tags", message: "has \(tags.count) tags; a user has at most \(BroadcastAudience.maxTags)")
            )
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        let stored = Self.distinctSorted(tags)
        try await store.replaceTags(key, with: stored)
        return stored
    }

    /// The user's tags, in byte order (none when never set).
    public func tags(app appID: String, user userID: String) async throws -> [String] {
        try await store.tags(try feedKey(appID, userID))
    }

    /// The errors of tags that are not identifiers, named `field[i]`.
    static func tagErrors(_ tags: [String], field: String) -> [HubError.FieldError] {
        tags.enumerated().compactMap { index, tag in
            Identifier.violation(in: tag).map { .init(field: "\(field)[\(index)]", message: $0.message) }
        }
    }

    static func distinctSorted(_ values: [String]) -> [String] {
        var seen = Set<[UInt8]>()
        return values.filter { seen.insert(Array($0.utf8)).inserted }.sorted(by: AudienceOrder.precedes)
    }

    // MARK: Broadcasts

    /// Creates a broadcast of `draft` to `audience`; it is durable when this returns, and this
    /// instance's expander starts on it at once.
    ///
    /// The draft is validated as a single publish's (the same field errors), so no user of the
    /// audience fails for the body; without `expirationDateTime` it gets the default lifetime
    /// from now (or from its `scheduledDateTime`), the same for every user.
    ///
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - audience: who gets it; for ``BroadcastAudience/users(count:)`` the users are `users`.
    ///   - users: the listed users of a `users` audience (at most ``BroadcastAudience/maxUsers``),
    ///     ignored otherwise.
    ///   - draft: the publish body every user gets.
    /// - Returns: the stored broadcast, `queued`.
    /// - Throws: ``HubError`` `invalid-request` naming `audience.…` or the draft's fields,
    ///   `payload-too-large`, `not-found` for an unknown app.
    public func createBroadcast(
        app appID: String, audience: BroadcastAudience, users: [String] = [], draft: NotificationDraft
    ) async throws -> Broadcast {
        let app = try app(appID)
        let now = now()
        var errors = Self.audienceErrors(audience, users: users)
        var draft = draft
        do throws(HubError) {
            _ = try publishRequest(app: app, user: "broadcast", draft, now: now, handOff: nil)
        } catch {
            if errors.isEmpty { throw error }
            errors += error.fieldErrors
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        if draft.expirationDateTime == nil {
            let start = draft.scheduledDateTime.map { max($0, now) } ?? now
            draft.expirationDateTime = start.addingTimeInterval(configuration.defaultLifetime.seconds)
        }
        var stored = audience
        var listed: [String] = []
        if case .users = audience {
            stored = .users(count: users.count)
            listed = users
        }
        let broadcast = Broadcast(
            appId: app.id, id: RandomID.make(), audience: stored, draft: draft, createdDateTime: now)
        let created = try await store.createBroadcast(broadcast, users: listed)
        logger.info(
            "broadcast created", metadata: ["app": "\(app.id)", "broadcast": "\(created.id)"])
        broadcastBells.ring(Self.expanderBell)
        return created
    }

    /// The audience's problems, named `audience.…`.
    static func audienceErrors(_ audience: BroadcastAudience, users: [String]) -> [HubError.FieldError] {
        switch audience {
        case .allUsers:
            return []
        case .users:
            var errors: [HubError.FieldError] = []
            if users.isEmpty {
                errors.append(.init(field: "audience.users", message: "must list at least one user"))
            } else if users.count > BroadcastAudience.maxUsers {
                errors.append(
                    .init(
                        field: "audience.users",
                        message: "lists \(users.count) users; a broadcast lists at most \(BroadcastAudience.maxUsers)"))
            }
            for (index, user) in users.enumerated() {
                guard let violation = Identifier.violation(in: user) else { continue }
                errors.append(.init(field: "audience.users[\(index)]", message: violation.message))
                if errors.count >= 20 { break }
            }
            return errors
        case .tags(let anyOf, let allOf):
            var errors = tagErrors(anyOf, field: "audience.tags.anyOf") + tagErrors(allOf, field: "audience.tags.allOf")
            if anyOf.isEmpty && allOf.isEmpty {
                errors.append(.init(field: "audience.tags", message: "give anyOf and/or allOf, with at least one tag"))
            }
            for (name, list) in [("anyOf", anyOf), ("allOf", allOf)] where list.count > BroadcastAudience.maxTags {
                errors.append(
                    .init(
                        field: "audience.tags.\(name)",
                        message: "has \(list.count) tags; at most \(BroadcastAudience.maxTags)"))
            }
            return errors
        }
    }

    /// One broadcast of the app, with its progress.
    /// - Throws: ``HubError`` `not-found`.
    public func broadcast(app appID: String, id: String) async throws -> Broadcast {
        let app = try app(appID)
        try Identifier.check(id, field: "id")
        guard let found = try await store.broadcast(appId: app.id, id: id) else {
            throw HubError(.notFound, "No broadcast '\(id)' in the app '\(app.id)'.")
        }
        return found
    }

    /// The app's broadcasts, newest first: at most `limit` (1–100) after the broadcast `after`.
    public func broadcasts(app appID: String, after: String? = nil, limit: Int = 50) async throws -> [Broadcast] {
        let app = try app(appID)
        if let after { try Identifier.check(after, field: "after") }
        return try await store.broadcasts(appId: app.id, after: after, limit: min(max(limit, 1), 100))
    }

    /// Cancels a broadcast: users not yet published never get it (a chunk being published
    /// finishes). Cancelling a cancelled broadcast answers it again.
    /// - Throws: ``HubError`` `not-found`; `conflict` when it is already `done`.
    public func cancelBroadcast(app appID: String, id: String) async throws -> Broadcast {
        let app = try app(appID)
        try Identifier.check(id, field: "id")
        guard let cancelled = try await store.cancelBroadcast(appId: app.id, id: id, at: now()) else {
            throw HubError(.notFound, "No broadcast '\(id)' in the app '\(app.id)'.")
        }
        if cancelled.status == .done {
            throw HubError(.conflict, "The broadcast '\(id)' is done: every user of its audience has it.")
        }
        return cancelled
    }

    // MARK: Expanding

    /// Leases the next chunk of an open broadcast (or one whose instance died), publishes it
    /// user by user through ``publish(app:batch:)`` (the one publish path: validation, planner,
    /// outbox, hand-offs), ``BroadcastConfiguration/usersPerWrite`` users a call (the whole chunk
    /// in one when the store does not write ``FeedStore/writesOneAtATime``; each part validated
    /// while the one before is written), and records its progress.
    /// - Returns: whether there was a chunk to publish.
    /// - Throws: the store's error; the chunk's lease then ends and it is published again.
    @discardableResult
    public func expandBroadcastChunk() async throws -> Bool {
        try await expandBroadcastChunk(as: configuration.instanceID) != nil
    }

    /// ``expandBroadcastChunk()`` leasing as `owner`.
    /// - Returns: the chunk's users, or nil when there was no chunk.
    func expandBroadcastChunk(as owner: String) async throws -> Int? {
        let settings = configuration.broadcasts
        let leasedAt = now()
        guard
            let chunk = try await store.leaseBroadcastChunk(
                size: max(1, settings.chunkSize), owner: owner, now: leasedAt,
                leaseUntil: leasedAt.addingTimeInterval(settings.lease.seconds))
        else { return nil }
        let broadcast = chunk.broadcast
        var published = 0
        var failed = 0
        if router.apps[broadcast.appId] != nil {
            let size = store.writesOneAtATime ? max(1, settings.usersPerWrite) : max(1, chunk.users.count)
            let parts = stride(from: 0, to: chunk.users.count, by: size).map {
                chunk.users[$0..<min($0 + size, chunk.users.count)]
            }
            // The next part is validated while this one is written: the writer waits less for the
            // expander between parts, and each part is still a write of its own.
            var next = try parts.first.map { try preparePart($0, of: broadcast) }
            for index in parts.indices {
                guard let current = next else { break }
                async let following = try parts.dropFirst(index + 1).first.map {
                    try self.preparePart($0, of: broadcast)
                }
                let outcomes = try await publish(current)
                next = try await following
                for outcome in outcomes {
                    if case .success = outcome { published += 1 } else { failed += 1 }
                }
            }
        } else {
            failed = chunk.users.count
        }
        try await store.finishBroadcastChunk(chunk, published: published, failed: failed, at: now())
        await reportIfDone(broadcast)
        logger.debug(
            "broadcast chunk published",
            metadata: [
                "app": "\(broadcast.appId)", "broadcast": "\(broadcast.id)", "published": "\(published)",
                "failed": "\(failed)",
            ])
        return chunk.users.count
    }

    /// The publish of a part of a chunk, validated (``prepareBatch(app:_:)``).
    private func preparePart(_ users: ArraySlice<String>, of broadcast: Broadcast) throws -> PreparedBatch {
        try prepareBatch(app: broadcast.appId, users.map { BatchItem(userId: $0, draft: broadcast.draft) })
    }

    /// Runs ``BroadcastConfiguration/concurrentChunks`` expanders until graceful shutdown, paced
    /// together by ``BroadcastConfiguration/maxUsersPerSecond``.
    func runBroadcastExpanders() async {
        let settings = configuration.broadcasts
        let pacer = settings.maxUsersPerSecond.map { BroadcastPacer(usersPerSecond: $0, start: clock.now) }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<max(1, settings.concurrentChunks) {
                let owner = index == 0 ? configuration.instanceID : "\(configuration.instanceID)/\(index + 1)"
                group.addTask { await self.runBroadcastExpander(as: owner, pacer: pacer) }
            }
        }
    }

    /// Expands broadcasts chunk after chunk as `owner` until graceful shutdown: between chunks it
    /// yields, waits its turn of `pacer`, and waits while this instance's lanes still hold more
    /// handed-off deliveries than they send at once (a broadcast goes at the pace of delivery, and
    /// single publishes queue behind one chunk per expander at most). Idle, it looks again every
    /// ``BroadcastConfiguration/pollInterval`` or when a broadcast is created here. Store failures
    /// are logged once per episode and retried.
    func runBroadcastExpander(as owner: String, pacer: BroadcastPacer?) async {
        let settings = configuration.broadcasts
        var failures = 0
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let ticket = broadcastBells.ticket()
                var users: Int?
                do {
                    users = try await expandBroadcastChunk(as: owner)
                    if failures > 0 { logger.notice("expanding broadcasts works again") }
                    failures = 0
                } catch {
                    if failures == 0 && !Task.isCancelled {
                        logger.warning("expanding a broadcast failed; retrying", metadata: ["error": "\(error)"])
                    }
                    failures += 1
                }
                if let users {
                    if let turn = pacer?.next(after: users, now: clock.now) { await pause(until: turn) }
                    await dispatcher.waitForHandOffRoom()
                    await Task.yield()
                    continue
                }
                let pause = failures > 0 ? dispatcher.storeBackoff(failures) : settings.pollInterval
                _ = await broadcastBells.wait(Self.expanderBell, after: ticket, timeout: pause)
            }
        } onGracefulShutdown: {
            self.broadcastBells.ring(Self.expanderBell)
            self.broadcastBells.ring(Self.pacingBell)
        }
    }

    /// Waits on the hub's clock until `deadline`; graceful shutdown ends the wait.
    private func pause(until deadline: ContinuousClock.Instant) async {
        while clock.now < deadline && !Task.isShuttingDownGracefully && !Task.isCancelled {
            let ticket = broadcastBells.ticket()
            _ = await broadcastBells.wait(Self.pacingBell, after: ticket, timeout: deadline - clock.now)
        }
    }

    /// What wakes the expander.
    static let expanderBell = Bell("broadcast expander")
    /// What the pacer's pauses wait on: only graceful shutdown rings it.
    static let pacingBell = Bell("broadcast pacing")
}

/// Paces the expanders of one instance to a number of users a second, together: after a chunk,
/// the next may start once the chunk's share of a second has passed since the later of the
/// previous turn and the chunk's end (never faster than the rate, also after an idle time).
final class BroadcastPacer: Sendable {
    private let usersPerSecond: Int
    /// When the next chunk may start.
    private let turn: Mutex<ContinuousClock.Instant>

    init(usersPerSecond: Int, start: ContinuousClock.Instant) {
        self.usersPerSecond = max(1, usersPerSecond)
        self.turn = Mutex(start)
    }

    /// Counts a chunk of `users` published; returns when the next chunk may start.
    func next(after users: Int, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        turn.withLock { turn in
            turn = max(turn, now) + .seconds(Double(users) / Double(usersPerSecond))
            return turn
        }
    }
}

extension Dispatcher.Lane {
    /// Whether the lane runs and a lane's worth of handed-off deliveries or more wait for its slots.
    var holdsALaneOfHandOffs: Bool { handedOff.withLock { ($0?.count ?? 0) >= concurrency } }
}

extension Dispatcher {
    /// Waits while a running lane of this instance holds a lane's worth of handed-off deliveries
    /// or more (woken by its sends returning), or until shutdown.
    func waitForHandOffRoom() async {
        while !stopping {
            let ticket = bells.ticket()
            guard let full = lanes.first(where: \.holdsALaneOfHandOffs) else { return }
            _ = await bells.wait(full.slotBell, after: ticket, timeout: .seconds(1))
        }
    }

}

extension Hub {
    /// Enqueues `broadcast.done` for the app's webhooks when the chunk just finished was its last
    /// (the broadcast is `done` now). Its user is empty: a broadcast is no one user's.
    func reportIfDone(_ broadcast: Broadcast) async {
        guard let app = router.apps[broadcast.appId],
            app.webhooks.contains(where: { $0.events.contains(.broadcastDone) }),
            let current = try? await store.broadcast(appId: broadcast.appId, id: broadcast.id), current.status == .done
        else { return }
        let event = WebhookEvent.make(.broadcastDone, appId: current.appId, userId: "", at: now()) { json in
            json.member("broadcastId", current.id)
            json.member("status", current.status.rawValue)
            json.member("audienceSize", current.audienceSize)
            json.member("published", current.published)
            json.member("failed", current.failed)
            json.member("createdDateTime", current.createdDateTime)
            json.member("completedDateTime", current.completedDateTime)
        }
        await enqueueWebhookEvents([event], app: current.appId)
    }
}
