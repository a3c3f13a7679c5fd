import Foundation
public import HubCore
import Logging
import PostgresNIO

// Publishing, several users at a time: concurrent publishes queue in a `Batcher` (see
// `Batcher.swift`), and a batch of publishes to different feeds runs in one transaction of four
// round trips whatever its size: BEGIN; lock the feeds (in the sweep's order, so that the two
// never deadlock) and then read what each publish depends on (the notification it may update, the
// user's endpoints, which of them have a pending tap to merge into); write every notification and
// every planned delivery, leasing the hand-offs, and move the user's badge counters, in one
// statement; COMMIT. A publish that arrives while no batch runs is a batch of one. The feed locks
// and the read are one call of a function (migration 13) whose read takes its own snapshot after
// the locks: at READ COMMITTED a plain statement reads a snapshot taken when it starts, before it
// waited for a lock (see `PostgresStore+Versions.swift` and `LockAndReadForPublish`).
//
// Hand-offs in the write: a row due at once whose transport the hand-off names is written leased.
// A tap that merges into a waiting one cannot be inserted leased (a leased row is outside the
// index `hub_delivery_pending_tap` that finds the waiting tap), so taps to endpoints with a
// waiting tap, and taps not handed off, go through `ON CONFLICT … DO UPDATE`, which takes the
// lease of the incoming row. While the feed is locked no other transaction can make a tap wait
// for an endpoint (publishes, put-backs and the sweep lock the feed; claims only lease waiting
// taps), so the read's answer holds until the write — or a waiting tap was claimed meanwhile, and
// the new tap is simply inserted.
//
// Failures: the batch's transaction commits all of its publishes or none. When the database
// refuses it (a payload it cannot store, a constraint), each publish of the batch runs again
// alone, so one bad publish fails only itself; an outage fails them all (each caller gets
// `HubError(.unavailable)`, as it would alone).
//
// Deadlines: each publish carries its caller's `DeadlineHold` (the hub's store deadline). Before
// `COMMIT` the batch holds all of them off (`inTransaction`): when a caller has already been
// answered 503, the batch rolls back rather than store a publish reported as not stored, and runs
// again without it; once `COMMIT` is sent, every caller waits for its answer, so a publish that
// committed is answered as stored however slow the commit.
extension PostgresStore {
    /// Upserts the notification `(app, user, appNotificationId)` and enqueues its deliveries, in
    /// one transaction that holds the feed's lock (see `PostgresStore+Versions.swift`), possibly
    /// with other users' publishes.
    ///
    /// The notification it leaves is ``PublishRequest/outcome(existing:)``'s.
    ///
    /// Every case takes the next change version. Deliveries: what `request.planner` plans for
    /// the user's endpoints as this transaction reads them; those due at once whose transport
    /// `request.handOff` names are leased to its owner and returned.
    public func publish(_ request: PublishRequest) async throws -> PublishResult {
        try Identifier.checkBeforeStoring(request)
        let job = PublishJob(request: request, hold: DeadlineHold.current)
        return try await publishes.submit(job, key: request.key) { [self] jobs in
            await publishBatch(jobs)
        }
    }

    /// `false`: transactions run side by side, and a ``publish(batch:)`` locks only its own
    /// users' feeds, so a broadcast chunk is written in one call (4 round trips) rather than in
    /// parts of `usersPerWrite` (`PostgresStore+PublishBatch.swift`).
    public var writesOneAtATime: Bool { false }

    /// A publish waiting for its batch, with its caller's deadline hold (`nil`: no deadline).
    struct PublishJob: Sendable {
        var request: PublishRequest
        var hold: DeadlineHold?
    }

    /// Runs `jobs` (of distinct feeds) in one transaction; see the comment at the top.
    func publishBatch(_ jobs: [PublishJob]) async -> [Result<PublishResult, any Error>] {
        // One hand-off owner per transaction (a store's publishes all come from its hub's
        // dispatcher; a store shared by several hubs in one process is run owner by owner).
        let owners = Set(jobs.compactMap(\.request.handOff?.owner))
        if owners.count > 1 {
            var results = [Result<PublishResult, any Error>?](repeating: nil, count: jobs.count)
            for owner in owners.sorted() + [nil] {
                let indices = jobs.indices.filter { jobs[$0].request.handOff?.owner == owner }
                guard !indices.isEmpty else { continue }
                for (index, result) in zip(indices, await publishBatch(indices.map { jobs[$0] })) {
                    results[index] = result
                }
            }
            return results.map { $0 ?? .failure(BatchFailure.unanswered) }
        }
        do {
            // The batch's task is the first caller's: hold every caller's deadline, not its.
            let hold = DeadlineHold(combining: jobs.compactMap(\.hold))
            let requests = jobs.map(\.request)
            return try await DeadlineHold.$current.withValue(hold) {
                try await transaction { db in try await Self.publish(requests, db) }
            }.map { .success($0) }
        } catch let error as CallerAlreadyAnswered {
            // Some callers were answered (503) before COMMIT and nothing was stored; the others
            // run again without them (at least one fewer each time: a hold fails only when ended).
            var results = [Result<PublishResult, any Error>](repeating: .failure(error), count: jobs.count)
            let live = jobs.indices.filter { !(jobs[$0].hold?.hasEnded ?? false) }
            logger.debug(
                "publishes outlived their callers' deadlines before COMMIT; rolled back",
                metadata: ["publishes": "\(jobs.count)", "runAgain": "\(live.count)"])
            guard !live.isEmpty, live.count < jobs.count else { return results }
            for (index, result) in zip(live, await publishBatch(live.map { jobs[$0] })) {
                results[index] = result
            }
            return results
        } catch let error as PostgresStoreError where jobs.count > 1 {
            logger.debug(
                "a batch of publishes was refused; running each alone",
                metadata: ["publishes": "\(jobs.count)", "error": "\(error)"])
            var results: [Result<PublishResult, any Error>] = []
            for job in jobs { results += await publishBatch([job]) }
            return results
        } catch {
            return jobs.map { _ in .failure(error) }
        }
    }

    /// Locks the feeds `keys` (default: those of `jobs`, in the sweep's order), then reads, plans
    /// and writes `jobs` (of distinct feeds) in two statements, numbering them in order.
    static func publish(
        _ jobs: [PublishRequest], locking keys: [FeedKey]? = nil, _ db: Session
    ) async throws -> [PublishResult] {
        let reads = try await readForPublish(jobs, locking: keys ?? sweepOrder(jobs.map(\.key)), db)
        var writes: [PublishWrite] = []
        writes.reserveCapacity(jobs.count)
        for (request, read) in zip(jobs, reads) {
            let (notification, created) = request.outcome(existing: read.existing)
            let plan = request.planner.plan(
                notification, .published(mode: request.deliveryMode), endpoints: read.endpoints, now: request.now)
            writes.append(
                PublishWrite(
                    request: request, notification: notification, created: created,
                    rows: coalesced(OutboxMachine.creationOrder(plan).map { OutboxRow($0, of: notification) }),
                    read: read))
        }
        return try await write(writes, db)
    }

    /// What a publish reads after locking the feed.
    struct PublishRead {
        var existing: UserNotification?
        var endpoints: [Endpoint] = []
        /// Endpoints with a pending, unleased tap that a new tap merges into.
        var waitingTaps: Set<String> = []
    }

    /// A publish planned and ready to write.
    struct PublishWrite {
        var request: PublishRequest
        var notification: UserNotification
        var created: Bool
        var rows: [OutboxRow]
        var read: PublishRead

        /// Whether each of ``rows`` is leased to the hand-off's owner at once
        /// (``HubCore/OutboxMachine/handsOff(dueAt:transport:to:at:)``).
        var hands: [Bool] {
            rows.map { row in
                OutboxMachine.handsOff(
                    dueAt: row.dueAt, transport: TransportID(rawValue: row.transport), to: request.handOff,
                    at: request.now)
            }
        }
    }

    /// Locks the feeds `keys` (in that order) and then reads what `jobs` depend on, in one round
    /// trip (``LockAndReadForPublish``).
    static func readForPublish(
        _ jobs: [PublishRequest], locking keys: [FeedKey], _ db: Session
    ) async throws -> [PublishRead] {
        var binds = PostgresBindings(capacity: 6)
        binds.append(feedLockSpace)
        binds.append(keys.map(\.appId))
        binds.append(keys.map(\.userId))
        binds.append(jobs.map(\.key.appId))
        binds.append(jobs.map(\.key.userId))
        binds.append(jobs.map(\.draft.appNotificationId))
        var reads = Array(repeating: PublishRead(), count: jobs.count)
        for row in try await db.run(LockAndReadForPublish.self, binds) {
            let row = row.makeRandomAccess()
            let job = Int(try row.value("job", as: Int64.self)) - 1
            guard reads.indices.contains(job) else {
                throw PostgresStoreError(.server, "reading for a publish returned a row for publish \(job + 1)")
            }
            if reads[job].existing == nil, try row.value(NotificationColumns.Names.plain.id, as: String?.self) != nil {
                reads[job].existing = try UserNotification(row: row)
            }
            guard try row.value(EndpointColumns.Names.joined.id, as: String?.self) != nil else { continue }
            let endpoint = try Endpoint(row: row, .joined)
            reads[job].endpoints.append(endpoint)
            if try row.value("waiting_tap", as: Bool.self) { reads[job].waitingTaps.insert(endpoint.id) }
        }
        return reads
    }

    /// Writes every notification of `writes` with the next change version and their planned
    /// deliveries in one statement (``WriteForPublish``), leasing the hand-offs.
    /// - Returns: per publish, the notification as stored, the deliveries leased to the
    ///   hand-off's owner (with what a send needs), and how many rows due at once are left for a
    ///   claim.
    static func write(_ writes: [PublishWrite], _ db: Session) async throws -> [PublishResult] {
        let written = try await db.run(WriteForPublish.self, try WriteForPublish.bindings(writes))
        var stored: [UserNotification?] = Array(repeating: nil, count: writes.count)
        var handed: [[Delivery]] = Array(repeating: [], count: writes.count)
        var left = Array(repeating: 0, count: writes.count)
        for row in written {
            let row = row.makeRandomAccess()
            let job = Int(try row.value("job", as: Int64.self)) - 1
            guard writes.indices.contains(job) else {
                throw PostgresStoreError(.server, "a publish's write returned a row for publish \(job + 1)")
            }
            if stored[job] == nil { stored[job] = try UserNotification(row: row, .joined) }
            guard try row.value("id", as: Int64?.self) != nil else { continue }
            if try row.value("handed", as: Bool.self) {
                handed[job].append(try Delivery(row: row))
            } else if try row.value("due", as: Bool.self) {
                left[job] += 1
            }
        }
        return try writes.indices.map { job in
            guard let notification = stored[job] else {
                throw PostgresStoreError(
                    .server, "saving notification \(writes[job].notification.id) returned no row")
            }
            return PublishResult(
                notification: notification, created: writes[job].created,
                handedOff: HandOff.claimed(
                    handed[job], endpoints: writes[job].read.endpoints, notification: notification),
                leftForClaim: left[job])
        }
    }
}
