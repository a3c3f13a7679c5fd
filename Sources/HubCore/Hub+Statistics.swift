public import Foundation
import ServiceLifecycle

extension Hub {
    // MARK: Reading

    /// The app's statistics over time (see ``StatisticsStore``): its buckets of `resolution` from
    /// `from` (rounded down to a bucket's start) until `to`, per transport and for the app as a
    /// whole, with totals over the range and the app's endpoints now.
    ///
    /// Counts reach the store at the next flush (every ``HubConfiguration/statisticsFlushInterval``),
    /// so the latest seconds may not show yet.
    ///
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - resolution: minute buckets (kept 24 hours) or hour buckets (kept 30 days).
    ///   - from: the range's start; by default an hour (minutes) or a day (hours) before `to`.
    ///   - to: the range's end (exclusive); by default now.
    /// - Throws: ``HubError`` `not-found` for an unknown app; `invalid-request` naming `from` when
    ///   it is not before `to` or the range is longer than the resolution's retention.
    public func statistics(
        app appID: String, resolution: StatisticsResolution = .minute, from: Date? = nil, to: Date? = nil
    ) async throws -> StatisticsReport {
        let app = try app(appID)
        let end = to ?? now()
        let start = from ?? end.addingTimeInterval(-Self.defaultStatisticsSpan(resolution))
        guard start < end else {
            throw HubError.invalid([.init(field: "from", message: "must be before to")])
        }
        guard end.timeIntervalSince(start) <= resolution.retention.seconds else {
            let limit = resolution == .minute ? "24 hours" : "30 days"
            throw HubError.invalid([
                .init(field: "from", message: "a range of \(resolution.rawValue) buckets covers at most \(limit)")
            ])
        }
        let aligned = resolution.start(of: start)
        async let buckets = store.statistics(appId: app.id, resolution: resolution, from: aligned, to: end)
        async let endpoints = store.endpointCounts(appId: app.id)
        return StatisticsReport(
            appId: app.id, resolution: resolution, from: aligned, to: end, buckets: try await buckets,
            endpoints: try await endpoints)
    }

    /// The range read when none is given: an hour of minutes, a day of hours.
    static func defaultStatisticsSpan(_ resolution: StatisticsResolution) -> TimeInterval {
        resolution == .minute ? 3_600 : 86_400
    }

    // MARK: Flushing

    /// Adds the counts gathered since the last flush to the store. The hub's service does it
    /// every ``HubConfiguration/statisticsFlushInterval`` and once more when it stops; call it to see
    /// the latest counts at once (tests, an embedder about to read).
    ///
    /// - Throws: what the store threw; the counts are kept for the next flush. A store without
    ///   statistics (``HubError`` `unsupported`) turns counting off instead.
    public func flushStatistics() async throws {
        let deltas = accumulator.take()
        let dropped = accumulator.takeDropped()
        if dropped > 0 {
            logger.warning(
                "statistics counts dropped: too many apps, transports and minutes waited for a flush",
                metadata: ["count": "\(dropped)"])
        }
        guard !deltas.isEmpty else { return }
        do {
            try await store.addStatistics(deltas)
        } catch let error as HubError where error.code == .unsupported {
            accumulator.disable()
            logger.notice("the store keeps no statistics over time; not counting them", metadata: ["error": "\(error)"])
        } catch {
            accumulator.putBack(deltas)
            throw error
        }
    }

    /// Flushes every ``HubConfiguration/statisticsFlushInterval`` until graceful shutdown. A failing
    /// store is logged once per episode; the counts wait for the next flush.
    func runStatisticsFlusher() async {
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown {
                    try await self.clock.sleep(for: self.configuration.statisticsFlushInterval)
                }
            } catch {
                return
            }
            failing = await flushStatisticsLogging(failing: failing)
        }
    }

    /// The last flush, when the dispatcher has stopped (its last outcomes are counted): tried
    /// again for at most ``DispatcherConfiguration/shutdownFlushTimeout`` while the store fails.
    ///
    /// It survives cancellation: an embedder that stops ``run()`` by cancelling its task (not by a
    /// graceful shutdown) still gets the last counts written. The flush then runs in a task of its
    /// own, which cancellation does not reach, and is cancelled itself when it takes longer than
    /// ``DispatcherConfiguration/shutdownFlushTimeout`` (so stopping stays bounded); it is tried
    /// once, not again.
    func flushStatisticsAtShutdown() async {
        guard Task.isCancelled else { return await flushStatisticsRetrying(retry: true) }
        let flush = Task { await self.flushStatisticsRetrying(retry: false) }
        let bound = Task {
            try await Task.sleep(for: self.configuration.dispatcher.shutdownFlushTimeout)
            flush.cancel()
        }
        await flush.value
        bound.cancel()
    }

    /// Flushes, then (`retry`) tries again every 200 ms until ``DispatcherConfiguration/shutdownFlushTimeout``
    /// while the store fails; logs what is left unwritten.
    private func flushStatisticsRetrying(retry: Bool) async {
        let deadline = clock.now + configuration.dispatcher.shutdownFlushTimeout
        var failing = false
        while true {
            failing = await flushStatisticsLogging(failing: failing)
            if !failing { return }
            guard retry, clock.now < deadline, !Task.isCancelled else {
                logger.error(
                    "stopping with statistics not written to the store",
                    metadata: ["entries": "\(accumulator.pendingCount)"])
                return
            }
            try? await clock.sleep(for: .milliseconds(200))
        }
    }

    /// One flush; logs the first failure of an episode and the recovery.
    /// - Returns: whether it failed.
    private func flushStatisticsLogging(failing: Bool) async -> Bool {
        do {
            try await flushStatistics()
            if failing { logger.notice("statistics are written to the store again") }
            return false
        } catch {
            if !failing {
                logger.warning(
                    "writing statistics to the store failed; they are kept and written with the next flush",
                    metadata: ["error": "\(error)"])
            }
            return true
        }
    }
}
