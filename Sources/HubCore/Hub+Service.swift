import Foundation
import ServiceLifecycle

extension Hub {
    /// Runs the dispatcher and the expiry sweeper until graceful shutdown, then drains in-flight sends.
    public func run() async throws {
        if configuration.dispatcher.enabled {
            do {
                try await store.releaseLeases(owner: configuration.instanceID)
            } catch {
                logger.warning("releasing this instance's old leases failed", metadata: ["error": "\(error)"])
            }
        }
        await withTaskGroup(of: Void.self) { group in
            if self.configuration.dispatcher.enabled {
                group.addTask { await self.dispatcher.run() }
            }
            group.addTask { await self.runSweeper() }
            await group.waitForAll()
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
