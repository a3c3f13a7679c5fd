import Foundation
import ServiceLifecycle

extension Hub {
    /// Runs the dispatcher and the expiry sweeper until graceful shutdown, then drains in-flight sends.
    ///
    /// On start, with the dispatcher enabled, it takes back this instance's old leases and
    /// un-parks the deliveries suspended for a configuration fault (``DeliveryOutcome/suspended(reason:)``):
    /// a hub restarted with fixed configuration sends them; with the fault still there they are
    /// suspended again after one attempt.
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
            await group.waitForAll()
        }
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

    private func runSweeper() async {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            _ = await sweepOnce()
            try? await cancelWhenGracefulShutdown {
                try await Task.sleep(for: self.configuration.dispatcher.sweepInterval)
            }
        }
    }

    /// Expires notifications past their expiration and purges old tombstones once.
    /// - Returns: the feeds that changed.
    @discardableResult
    public func sweepOnce() async -> Set<FeedKey> {
        let current = now()
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
