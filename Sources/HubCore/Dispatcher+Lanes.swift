import Foundation
import Logging
import Metrics
import Synchronization

extension Dispatcher {
    /// One transport's share of the outbox: what it claims and how many sends it keeps in flight.
    final class Lane: Sendable {
        let selection: OutboxLane
        let concurrency: Int
        let name: String
        /// Rung when deliveries may be due (publishes, shutdown).
        let pokeBell: Bell
        /// Rung when a send of this lane returns (a slot freed) or the outcome backlog shrinks.
        let slotBell: Bell
        let inFlight = Atomic<Int>(0)
        /// How often ``Dispatcher/poke()`` rang this lane: rows may wait for a claim. A hand-off
        /// rings ``pokeBell`` too (to wake the lane) without counting here: it leaves nothing to claim.
        let pokes = Atomic<UInt64>(0)
        /// Deliveries handed off by this instance's publishes (already leased to it), sent before
        /// anything is claimed; `nil` while the lane does not run.
        let handedOff = Mutex<HandOffQueue?>(nil)
        /// Who holds the lane's slots: the app, user and host shares.
        let shares: LaneShares

        init(_ selection: OutboxLane, concurrency: Int, configuration: DispatcherConfiguration) {
            self.selection = selection
            self.concurrency = max(1, concurrency)
            self.shares = LaneShares(concurrency: max(1, concurrency), configuration: configuration)
            switch selection {
            case .transport(let id): name = id.rawValue
            case .otherThan: name = "other"
            case .all: name = "all"
            }
            pokeBell = Bell("poke of lane \(name)")
            slotBell = Bell("free slot of lane \(name)")
        }

        var freeSlots: Int { concurrency - inFlight.load(ordering: .acquiring) }

        /// Whether the lane takes hand-offs: it runs, and what waits for a slot is less than a lane.
        var takesHandOffs: Bool {
            guard let queued = handedOff.withLock({ $0?.count }) else { return false }
            return queued < concurrency
        }

        /// Queues handed-off deliveries; returns them if the lane stopped.
        func queue(_ items: [ClaimedDelivery]) -> [ClaimedDelivery] {
            handedOff.withLock { queue in
                guard queue != nil else { return items }
                queue!.append(items)
                return []
            }
        }

        /// Up to `limit` handed-off deliveries to send now.
        func takeHandedOff(_ limit: Int) -> [ClaimedDelivery] {
            handedOff.withLock { queue in queue?.take(limit) ?? [] }
        }

        func openHandOffs() { handedOff.withLock { $0 = HandOffQueue() } }

        /// Stops taking hand-offs; returns those never sent.
        func closeHandOffs() -> [ClaimedDelivery] {
            handedOff.withLock { queue in
                defer { queue = nil }
                return queue?.take(Int.max) ?? []
            }
        }

        /// The lane of deliveries whose transport this hub does not run.
        var isStrayLane: Bool {
            if case .otherThan = selection { return true }
            return false
        }

        /// Free slots worth a claim: a quarter of the lane, or any when nothing is in flight. A
        /// claim is a write transaction; claiming per freed slot would cost one per send.
        var claimThreshold: Int { max(1, concurrency / 4) }
    }

    /// Claims and sends the lane's deliveries until shutdown, then waits for its sends to return.
    ///
    /// Deliveries handed off by this instance's publishes go first, as slots free up; they need
    /// no claim. Then the lane claims as many due deliveries as it has free slots. When a claim comes back short,
    /// the lane's queue is drained for now and it sleeps until poked (or `idleInterval`, for
    /// deliveries that come due by time: retries, fallbacks, expired leases); a hand-off wakes it
    /// to be sent but does not end that pause (it leaves nothing to claim); when its slots are
    /// full, until one frees.
    ///
    /// Hand-offs never starve the outbox: once a claim is owed (the last one came back full, a
    /// publish left rows to claims, or an idle interval passed since the last one), the lane takes
    /// no more hand-offs until it has claimed, so claims and hand-offs take turns. Without that, a
    /// survivor whose own publishes keep its lane busy would leave a crashed instance's expired
    /// leases, and every retry, waiting until its load ends.
    func run(_ lane: Lane) async {
        if !lane.isStrayLane { lane.openHandOffs() }
        await withDiscardingTaskGroup { group in
            var drained = false
            // Taken before the claim that came back short: a poke after it (a publish that
            // committed while the claim ran, or after) ends the idle pause at once.
            var drainedTicket: UInt64 = 0
            // The lane's poke count before that claim, and when the claim came back.
            var drainedPokes: UInt64 = 0
            var drainedAt = clock.now
            var failures = 0
            // Hand-offs were sent since the last claim: a claim that is owed goes next.
            var claimsTurn = false
            let idle = lane.isStrayLane ? configuration.idleInterval * 10 : configuration.idleInterval
            while !stopping {
                let ticket = bells.ticket()
                let pokes = lane.pokes.load(ordering: .acquiring)
                let free = lane.freeSlots
                let claimOwed = !drained || pokes != drainedPokes || clock.now - drainedAt >= idle
                if !(claimOwed && claimsTurn) {
                    let handedOff = lane.takeHandedOff(free)
                    if !handedOff.isEmpty {
                        send(handedOff, in: lane, group: &group)
                        claimsTurn = true
                        continue
                    }
                }
                let busy = free < lane.concurrency
                if (busy && free < lane.claimThreshold) || recorder.backlog >= configuration.maxUnrecordedOutcomes {
                    await pause(.seconds(1), on: lane.slotBell, after: ticket)
                    continue
                }
                if drained {
                    await pause(idle - (clock.now - drainedAt), on: lane.pokeBell, after: drainedTicket)
                    if lane.pokes.load(ordering: .acquiring) == drainedPokes, clock.now - drainedAt < idle,
                        !stopping
                    {
                        // Rung for a hand-off only: take it (at the top of the loop) and keep
                        // waiting for a poke or the end of the idle interval; a claim now would
                        // find nothing (it cost a read per hand-off under load).
                        drainedTicket = ticket
                        continue
                    }
                    drained = false
                    continue
                }
                let limit = min(free, configuration.batchSize)
                let claimed: [ClaimedDelivery]
                do {
                    let start = now()
                    let leaseUntil = start.addingTimeInterval(configuration.lease.seconds)
                    if lane.selection == .transport(.webhooks) {
                        claimed = try await store.claimWebhookEvents(
                            limit: limit, now: start, owner: instanceID, leaseUntil: leaseUntil)
                    } else {
                        claimed = try await store.claimDeliveries(
                            lane.selection, limit: limit, now: start, owner: instanceID, leaseUntil: leaseUntil)
                    }
                    faults.succeeded("claimDeliveries")
                    failures = 0
                } catch {
                    if stopping { break }
                    failures += 1
                    faults.failed("claimDeliveries", error, retryIn: storeBackoff(failures))
                    await pause(storeBackoff(failures), on: lane.pokeBell, after: ticket)
                    continue
                }
                claimsTurn = false
                drained = claimed.count < limit
                drainedTicket = ticket
                drainedPokes = pokes
                drainedAt = clock.now
                if claimed.isEmpty { continue }
                leased.withLock { leased in for item in claimed { leased.insert(item.delivery.id) } }
                send(claimed, in: lane, group: &group)
            }
            // Handed off but never sent: put them back for the next claim (at-least-once).
            let unsent = lane.closeHandOffs()
            putBack(unsent)
            // Sends still waiting for their provider after the drain bound are cancelled: their
            // deliveries are retried by the next start.
            let deadline = clock.now + configuration.shutdownDrainTimeout
            while lane.inFlight.load(ordering: .acquiring) > 0, clock.now < deadline, !Task.isCancelled {
                let ticket = bells.ticket()
                guard lane.inFlight.load(ordering: .acquiring) > 0 else { break }
                _ = await bells.wait(lane.slotBell, after: ticket, timeout: deadline - clock.now)
            }
            let left = lane.inFlight.load(ordering: .acquiring)
            if left > 0 {
                logger.warning(
                    "sends still in flight after the drain bound are cancelled; their deliveries are retried",
                    metadata: ["lane": "\(lane.name)", "count": "\(left)"])
                group.cancelAll()
            }
        }
    }

    /// Sends `items` (leased to this instance) in `lane`, each in its own child task, as far as
    /// the lane's shares let them (``LaneShares``): a delivery over its app's, user's or host's
    /// share is put back unsent for a little later; one to a host that backs off fails fast.
    private func send(_ items: [ClaimedDelivery], in lane: Lane, group: inout DiscardingTaskGroup) {
        var admitted: [(ClaimedDelivery, LaneShares.Ticket)] = []
        admitted.reserveCapacity(items.count)
        let at = now()
        for item in items {
            let endpoint = item.endpoint
            let host = router.transport(endpoint.transport)?.destination(of: endpoint)
            let admission = lane.shares.admit(
                app: item.delivery.appId, weight: router.apps[item.delivery.appId]?.dispatchWeight ?? 1,
                user: FeedKey(appId: item.delivery.appId, userId: item.delivery.userId), host: host, at: at)
            switch admission {
            case .admitted(let ticket):
                admitted.append((item, ticket))
            case .deferred(let until, let reason):
                Counter(
                    label: "hub_deliveries_deferred_total", dimensions: [("lane", lane.name), ("share", reason)]
                ).increment()
                recorder.add(OutboxOutcome(id: item.delivery.id, .release(dueAt: until), at: at))
            case .hostDown(let until, let reason):
                let change = retry(item.delivery, after: .seconds(until.timeIntervalSince(at)), reason: reason)
                statistics.record(item.delivery, transport: endpoint.transport, change, at: at)
                recorder.add(OutboxOutcome(id: item.delivery.id, change, at: at))
            }
        }
        lane.inFlight.add(admitted.count, ordering: .releasing)
        for (item, ticket) in admitted {
            group.addTask {
                let (change, messageId, unreachable) = await self.process(item)
                let at = self.now()
                lane.shares.finished(ticket, unreachable: unreachable, at: at)
                self.statistics.record(item.delivery, transport: item.endpoint.transport, change, at: at)
                self.recorder.add(
                    OutboxOutcome(id: item.delivery.id, change, at: at, providerMessageId: messageId),
                    events: self.webhookEvents(of: item, change, providerMessageId: messageId, at: at),
                    webhook: item.delivery.kind == .webhook)
                lane.inFlight.subtract(1, ordering: .releasing)
                self.bells.ring(lane.slotBell)
            }
        }
        if admitted.count < items.count { bells.ring(lane.slotBell) }
    }

    /// The webhook rows the outcome `change` of `item` makes for its app's webhooks (none when the
    /// app has none that subscribe); written with the outcome, in its transaction.
    func webhookEvents(
        of item: ClaimedDelivery, _ change: OutboxOutcome.Change, providerMessageId: String?, at: Date
    ) -> [WebhookDelivery] {
        guard let app = router.apps[item.delivery.appId], !app.webhooks.isEmpty else { return [] }
        return WebhookEvent.rows(
            WebhookEvent.events(for: item, change, providerMessageId: providerMessageId, at: at), for: app)
    }

    /// Returns leased, unsent deliveries to the outbox, due at once, through the recorder.
    func putBack(_ items: [ClaimedDelivery]) {
        let at = now()
        for item in items {
            recorder.add(
                OutboxOutcome(id: item.delivery.id, .retry(dueAt: at, error: "not sent before the hub stopped"), at: at)
            )
        }
    }

    // MARK: Hand-offs

    /// The hand-off a publish at `now` may make to this dispatcher: the transports whose lanes
    /// run and have room. `nil` when none has (the publish leaves its deliveries to claims).
    func handOff(at now: Date) -> HandOff? {
        var transports = Set<TransportID>()
        for lane in lanes where lane.takesHandOffs {
            if case .transport(let id) = lane.selection { transports.insert(id) }
        }
        guard !transports.isEmpty else { return nil }
        return HandOff(
            owner: instanceID, leaseUntil: now.addingTimeInterval(configuration.lease.seconds), transports: transports)
    }

    /// Takes deliveries a publish leased to this instance: each to its transport's lane, renewed
    /// with the other leases until its outcome is written. A delivery whose lane stopped is put
    /// back; one for a transport without a lane keeps its lease until it ends.
    func accept(_ items: [ClaimedDelivery]) {
        guard !items.isEmpty else { return }
        leased.withLock { leased in for item in items { leased.insert(item.delivery.id) } }
        let byTransport = Dictionary(grouping: items, by: \.endpoint.transport)
        for (transport, group) in byTransport {
            guard let lane = lanes.first(where: { $0.selection == .transport(transport) }) else { continue }
            let refused = lane.queue(group)
            if refused.isEmpty {
                bells.ring(lane.pokeBell)
                bells.ring(lane.slotBell)
            } else {
                putBack(refused)
            }
        }
    }

    /// The pause after `failures` store failures in a row: 100 ms doubling up to `maxStoreBackoff`.
    func storeBackoff(_ failures: Int) -> Duration {
        let exponent = Double(max(0, min(failures - 1, 16)))
        return min(.milliseconds(Int64(100 * pow(2, exponent))), configuration.maxStoreBackoff)
    }

    /// Renews the leases of every delivery this instance holds, every `lease / 3`, until the
    /// recorder has written the last outcome.
    func keepLeases() async {
        let interval = configuration.lease / 3
        while !recorder.isFinished && !Task.isCancelled {
            let ticket = bells.ticket()
            _ = await bells.wait(Self.leaseBell, after: ticket, timeout: interval)
            let ids = leased.withLock { Array($0) }
            guard !ids.isEmpty, !recorder.isFinished else { continue }
            do {
                let current = now()
                try await store.renewLeases(
                    ids, owner: instanceID, until: current.addingTimeInterval(configuration.lease.seconds))
                faults.succeeded("renewLeases")
            } catch {
                faults.failed("renewLeases", error, retryIn: interval)
            }
        }
    }

    /// Rung when the recorder finished, so the lease keeper stops at once.
    static let leaseBell = Bell("lease keeper")
}

/// Logs a failing store operation once per episode (when it starts failing and when it recovers)
/// and counts every failure in `hub_store_errors_total{operation}`.
final class StoreFaults: Sendable {
    private let failing = Mutex<Set<String>>([])
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func failed(_ operation: String, _ error: any Error, retryIn delay: Duration) {
        Counter(label: "hub_store_errors_total", dimensions: [("operation", operation)]).increment()
        let first = failing.withLock { $0.insert(operation).inserted }
        if first {
            logger.error(
                "the store failed; the dispatcher keeps retrying",
                metadata: ["operation": "\(operation)", "error": "\(error)", "retryIn": "\(delay)"])
        }
    }

    func succeeded(_ operation: String) {
        let recovered = failing.withLock { failing in
            failing.isEmpty ? false : failing.remove(operation) != nil
        }
        if recovered {
            logger.notice("the store answers again", metadata: ["operation": "\(operation)"])
        }
    }
}

/// A lane's handed-off deliveries in arrival order. Taking from the front moves a head index
/// instead of shifting the rest (under load thousands wait and a few are taken at a time: shifting
/// them was 1 % of the hub's CPU with 100 endpoints per user).
struct HandOffQueue {
    private var items: [ClaimedDelivery] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func append(_ more: [ClaimedDelivery]) {
        if head > 0 && head >= items.count / 2 {
            items.removeFirst(head)
            head = 0
        }
        items.append(contentsOf: more)
    }

    /// Up to `limit` deliveries from the front.
    mutating func take(_ limit: Int) -> [ClaimedDelivery] {
        guard limit > 0, head < items.count else { return [] }
        let end = head + min(limit, items.count - head)
        let taken = Array(items[head..<end])
        head = end
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return taken
    }
}
