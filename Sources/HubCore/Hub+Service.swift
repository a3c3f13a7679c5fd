import Foundation
import ServiceLifecycle
import Synchronization

extension Hub {
    /// Runs the dispatcher, the expiry sweeper, the broadcast expander and the statistics flusher
    /// until graceful shutdown, then drains in-flight sends and writes the last statistics (``flushStatistics()``).
    ///
    /// On start, with the dispatcher enabled, it takes back this instance's old leases and
    /// un-parks the deliveries suspended for a configuration fault (``DeliveryOutcome/suspended(reason:)``):
    /// a hub restarted with fixed configuration sends them; with the fault still there they are
    /// suspended again after one attempt.
    ///
    /// Stopping: a `ServiceGroup`'s graceful shutdown (what `hub serve` does on SIGTERM), or
    /// cancelling the task that runs it. Either way the last statistics are written (cancellation
    /// does not reach that flush; it is bounded by ``DispatcherConfiguration/shutdownFlushTimeout``),
    /// so an embedder that cancels must wait for `run()` to return before it closes the store:
    /// ``stop(_:)`` does both.
    public func run() async throws {
        if configuration.dispatcher.enabled {
            do {
                try await store.releaseLeases(owner: configuration.instanceID)
            } catch {
                logger.warning("releasing this instance's old leases failed", metadata: ["error": "\(error)"])
            }
            await resumeSuspended()
        }
        await withTaskGroup(of: Void.self) { group in
            if self.configuration.dispatcher.enabled {
                group.addTask { await self.dispatcher.run() }
            }
            group.addTask { await self.runSweeper() }
            if self.configuration.broadcasts.enabled {
                group.addTask { await self.runBroadcastExpanders() }
            }
            group.addTask { await self.runStatisticsFlusher() }
            await group.waitForAll()
        }
        await flushStatisticsAtShutdown()
    }

    /// Stops hubs an embedder runs in tasks of its own (`Task { try await hub.run() }`): cancels
    /// each task, then waits until every ``run()`` has returned, with its last statistics written.
    /// Close the store after this, not before.
    /// - Parameter tasks: the tasks running ``run()``.
    public static func stop(_ tasks: [Task<Void, any Error>]) async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = await task.result }
    }

    /// Un-parks the suspended deliveries (see ``run()``).
    private func resumeSuspended() async {
        do {
            let resumed = try await store.resumeSuspended(at: now())
            if resumed > 0 {
                logger.notice(
                    "resumed deliveries suspended for a configuration fault", metadata: ["count": "\(resumed)"])
            }
        } catch {
            logger.warning("resuming suspended deliveries failed", metadata: ["error": "\(error)"])
        }
    }

    /// Sweeps every `sweepInterval`, and at the time of the earliest scheduled release (one this
    /// instance published, or the store's earliest at the last sweep), checked every second.
    private func runSweeper() async {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            _ = await sweepOnce()
            do {
                releases.expect(try await store.nextScheduledRelease())
            } catch {
                if !Task.isCancelled {
                    logger.warning("reading the next scheduled release failed", metadata: ["error": "\(error)"])
                }
            }
            let periodic = clock.now + configuration.dispatcher.sweepInterval
            try? await cancelWhenGracefulShutdown {
                while self.clock.now < periodic {
                    if let next = self.releases.earliest, next <= self.now() { break }
                    try await self.clock.sleep(for: min(.seconds(1), periodic - self.clock.now))
                }
            }
        }
    }

    /// Releases scheduled notifications whose time came, expires notifications past their
    /// expiration and purges old tombstones, once.
    /// - Returns: the feeds that changed.
    @discardableResult
    public func sweepOnce() async -> Set<FeedKey> {
        let current = now()
        releases.passed(current)
        do {
            let changed = try await store.sweep(
                now: current, purgeBefore: current.addingTimeInterval(-configuration.retention.seconds),
                planner: planner)
            for key in changed { await self.changed(key, version: nil) }
            return changed
        } catch {
            if !(error is CancellationError) && !Task.isCancelled {
                logger.error("sweeping expired notifications failed", metadata: ["error": "\(error)"])
            }
            return []
        }
    }
}

/// The earliest scheduled release the sweeper knows of.
final class ReleaseSchedule: Sendable {
    private let next = Mutex<Date?>(nil)

    var earliest: Date? { next.withLock { $0 } }

    /// Notes a release at `date` (earlier ones win).
    func expect(_ date: Date?) {
        guard let date else { return }
        next.withLock { next in next = min(next ?? date, date) }
    }

    /// Forgets the releases at or before `now` (the sweep about to run takes them).
    func passed(_ now: Date) {
        next.withLock { next in if let date = next, date <= now { next = nil } }
    }
}
