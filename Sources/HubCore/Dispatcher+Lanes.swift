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
        let pokeKey: FeedKey
        /// Rung when a send of this lane returns (a slot freed) or the outcome backlog shrinks.
        let slotKey: FeedKey
        let inFlight = Atomic<Int>(0)

        init(_ selection: OutboxLane, concurrency: Int) {
            self.selection = selection
            self.concurrency = max(1, concurrency)
            switch selection {
            case .transport(let id): name = id.rawValue
            case .otherThan: name = "other"
            case .all: name = "all"
            }
            pokeKey = FeedKey(appId: "lane-poke", userId: name)
            slotKey = FeedKey(appId: "lane-slot", userId: name)
        }

        var freeSlots: Int { concurrency - inFlight.load(ordering: .acquiring) }

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
    /// The lane claims as many due deliveries as it has free slots. When a claim comes back short,
    /// the lane's queue is drained for now and it sleeps until poked (or `idleInterval`, for
    /// deliveries that come due by time: retries, fallbacks, expired leases); when its slots are
    /// full, until one frees.
    func run(_ lane: Lane) async {
        await withDiscardingTaskGroup { group in
            var drained = false
            var failures = 0
            while !stopping {
                let ticket = bells.ticket()
                let free = lane.freeSlots
                let busy = free < lane.concurrency
                if (busy && free < lane.claimThreshold) || recorder.backlog >= configuration.maxUnrecordedOutcomes {
                    await pause(.seconds(1), on: lane.slotKey, after: ticket)
                    continue
                }
                if drained {
                    let idle = lane.isStrayLane ? configuration.idleInterval * 10 : configuration.idleInterval
                    await pause(idle, on: lane.pokeKey, after: ticket)
                    drained = false
                    continue
                }
                let limit = min(free, configuration.batchSize)
                let claimed: [ClaimedDelivery]
                do {
                    let start = now()
                    claimed = try await store.claimDeliveries(
                        lane.selection, limit: limit, now: start, owner: instanceID,
                        leaseUntil: start.addingTimeInterval(configuration.lease.seconds))
                    faults.succeeded("claimDeliveries")
                    failures = 0
                } catch {
                    if stopping { break }
                    failures += 1
                    faults.failed("claimDeliveries", error, retryIn: storeBackoff(failures))
                    await pause(storeBackoff(failures), on: lane.pokeKey, after: ticket)
                    continue
                }
                drained = claimed.count < limit
                if claimed.isEmpty { continue }
                leased.withLock { leased in for item in claimed { leased.insert(item.delivery.id) } }
                lane.inFlight.add(claimed.count, ordering: .releasing)
                for item in claimed {
                    group.addTask {
                        let change = await self.process(item)
                        self.recorder.add(OutboxOutcome(id: item.delivery.id, change, at: self.now()))
                        lane.inFlight.subtract(1, ordering: .releasing)
                        self.bells.wake(lane.slotKey)
                    }
                }
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
            _ = await bells.wait(Self.leaseKey, endpoint: nil, after: ticket, timeout: interval)
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
    static let leaseKey = FeedKey(appId: "lane-lease", userId: "")
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
