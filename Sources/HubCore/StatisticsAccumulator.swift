import Foundation
import Synchronization

/// The statistics counted since the last flush: publishes and send outcomes, per app, transport
/// and minute, waiting to be added to the store (``StatisticsStore/addStatistics(_:)``).
///
/// Counting is one dictionary update under a lock, cheap enough for the publish and send paths.
/// What a failed flush took is put back and added with the next one, so a store fault loses
/// nothing; memory stays bounded: past ``maxKeys`` (app, transport, minute) entries, counts for
/// new entries are dropped (and counted in ``dropped``) until a flush succeeds.
final class StatisticsAccumulator: Sendable {
    struct Key: Hashable, Sendable {
        let appId: String
        let transport: String
        /// Minutes since 1970.
        let minute: Int64
    }

    private struct State {
        var pending: [Key: StatisticsCounts] = [:]
        var dropped: Int64 = 0
        /// The store keeps no statistics: nothing is counted any more.
        var disabled = false
    }

    private let state = Mutex(State())
    /// The most (app, transport, minute) entries counted between two flushes.
    let maxKeys: Int
    /// Failure reasons one entry keeps apart; the others count under ``otherReason``.
    static let maxReasons = 32
    static let otherReason = "other"
    /// The longest reason kept, in characters.
    static let maxReasonLength = 80

    init(maxKeys: Int = 50_000) { self.maxKeys = maxKeys }

    // MARK: Counting

    /// One thing to count.
    private enum Event {
        case published
        case delivered(milliseconds: Int64)
        case retried
        case gone
        case failed(reason: String)
    }

    /// Counts a publish that stored a notification of `app` at `date`.
    func published(app: String, at date: Date) {
        add(.published, app: app, transport: StatisticsDelta.appWide, at: date)
    }

    /// Counts the outcome of one send (`change`, known at `date`) of `delivery` through
    /// `transport`. Superseded and released deliveries (never sent) are not counted.
    func record(_ delivery: Delivery, transport: TransportID, _ change: OutboxOutcome.Change, at date: Date) {
        let event: Event
        switch change {
        case .finish(.delivered, _, _):
            event = .delivered(milliseconds: Int64((date.timeIntervalSince(delivery.createdAt) * 1000).rounded()))
        case .finish(.endpointGone, _, _):
            event = .gone
        case .finish(.rejected, let detail, _):
            event = .failed(reason: Self.reason(detail ?? "rejected"))
        case .finish(.gaveUp, _, _):
            // The detail names attempts and age, different for each delivery.
            event = .failed(reason: "gaveUp")
        case .finish, .release:
            return
        case .retry:
            event = .retried
        case .suspend(let reason):
            event = .failed(reason: Self.reason(reason))
        }
        add(event, app: delivery.appId, transport: transport.rawValue, at: date)
    }

    private func add(_ event: Event, app: String, transport: String, at date: Date) {
        let key = Key(appId: app, transport: transport, minute: Self.minute(of: date))
        state.withLock { state in
            guard !state.disabled else { return }
            if state.pending[key] == nil && state.pending.count >= maxKeys {
                state.dropped += 1
                return
            }
            Self.count(event, in: &state.pending[key, default: StatisticsCounts()])
        }
    }

    private static func count(_ event: Event, in counts: inout StatisticsCounts) {
        switch event {
        case .published: counts.published += 1
        case .delivered(let milliseconds):
            counts.delivered += 1
            counts.latency.record(milliseconds: milliseconds)
        case .retried: counts.retried += 1
        case .gone: counts.gone += 1
        case .failed(let reason):
            let key = counts.failed[reason] != nil || counts.failed.count < maxReasons ? reason : otherReason
            counts.failed[key, default: 0] += 1
        }
    }

    /// The part of an outcome's reason statistics keep: up to the first `": "` (transports put the
    /// provider's label first, such as `400 BadDeviceToken: the device token is not valid`, and
    /// the rest may name a request), at most ``maxReasonLength`` characters, trimmed.
    static func reason(_ text: String) -> String {
        let label = text.range(of: ": ").map { String(text[..<$0.lowerBound]) } ?? text
        let trimmed = String(label.prefix(maxReasonLength)).trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "unknown" : trimmed
    }

    static func minute(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 60).rounded(.down))
    }

    // MARK: Flushing

    /// Takes everything counted, as deltas for the store, and starts counting afresh.
    func take() -> [StatisticsDelta] {
        let pending = state.withLock { state in
            defer { state.pending = [:] }
            return state.pending
        }
        return pending.map { key, counts in
            StatisticsDelta(
                appId: key.appId, transport: key.transport,
                minute: Date(timeIntervalSince1970: Double(key.minute * 60)), counts: counts)
        }
    }

    /// Puts back deltas a flush took but could not write, merged with what was counted since.
    func putBack(_ deltas: [StatisticsDelta]) {
        state.withLock { state in
            guard !state.disabled else { return }
            for delta in deltas {
                let key = Key(appId: delta.appId, transport: delta.transport, minute: Self.minute(of: delta.minute))
                state.pending[key, default: StatisticsCounts()].add(delta.counts)
            }
        }
    }

    /// Stops counting for good and forgets what was counted (the store keeps no statistics).
    func disable() {
        state.withLock { state in
            state.disabled = true
            state.pending = [:]
        }
    }

    /// Counts dropped because ``maxKeys`` entries waited; reset by reading.
    func takeDropped() -> Int64 {
        state.withLock { state in
            defer { state.dropped = 0 }
            return state.dropped
        }
    }

    /// The (app, transport, minute) entries waiting for a flush.
    var pendingCount: Int { state.withLock { $0.pending.count } }
}
