import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Works the durable outbox: claims due deliveries in batches, routes each to its transport,
/// and records the outcome (delivered, retried with back-off, endpoint gone, rejected, given up).
///
/// Graceful shutdown stops claiming, lets in-flight sends finish, then returns; deliveries still
/// queued stay in the store for the next start (at-least-once).
final class Dispatcher: Sendable {
    let store: any Store
    let router: Router
    let configuration: DispatcherConfiguration
    let instanceID: String
    let logger: Logger
    let now: @Sendable () -> Date
    private let doorbell = FeedSignals()
    private static let doorbellKey = FeedKey(appId: "", userId: "dispatcher")

    init(
        store: any Store, router: Router, configuration: DispatcherConfiguration, instanceID: String,
        logger: Logger, now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.router = router
        self.configuration = configuration
        self.instanceID = instanceID
        self.logger = logger
        self.now = now
    }

    /// Tells the dispatcher that new deliveries may be due.
    func poke() { doorbell.wake(Self.doorbellKey) }

    func run() async {
        logger.info("dispatcher started", metadata: ["instance": "\(instanceID)"])
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let ticket = doorbell.ticket()
            let claimed: [ClaimedDelivery]
            do {
                let start = now()
                claimed = try await store.claimDeliveries(
                    limit: configuration.batchSize, now: start, owner: instanceID,
                    leaseUntil: start.addingTimeInterval(configuration.lease.seconds))
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                logger.error("claiming deliveries failed; retrying in a second", metadata: ["error": "\(error)"])
                await idle(ticket: ticket, for: .seconds(1))
                continue
            }
            if claimed.isEmpty {
                var wait = configuration.idleInterval
                if let due = try? await store.nextDueDate() {
                    wait = min(wait, .milliseconds(max(0, Int64(due.timeIntervalSince(now()) * 1000))))
                }
                await idle(ticket: ticket, for: wait)
                continue
            }
            await send(claimed)
        }
        logger.info("dispatcher stopped", metadata: ["instance": "\(instanceID)"])
    }

    /// Sleeps until poked, `duration` passes, or graceful shutdown begins.
    private func idle(ticket: UInt64, for duration: Duration) async {
        guard duration > .zero else { return }
        await withGracefulShutdownHandler {
            _ = await doorbell.wait(Self.doorbellKey, endpoint: nil, after: ticket, timeout: duration)
        } onGracefulShutdown: {
            self.poke()
        }
    }

    /// Sends a batch with at most `concurrency` sends in flight.
    private func send(_ batch: [ClaimedDelivery]) async {
        await withTaskGroup(of: Void.self) { group in
            var pending = batch[...]
            for _ in 0..<min(configuration.concurrency, pending.count) {
                let next = pending.removeFirst()
                group.addTask { await self.process(next) }
            }
            while await group.next() != nil {
                if let next = pending.popFirst() {
                    group.addTask { await self.process(next) }
                }
            }
        }
    }

    func process(_ claimed: ClaimedDelivery) async {
        let delivery = claimed.delivery
        let endpoint = claimed.endpoint
        let transportLabel = endpoint.transport.rawValue
        guard let app = router.apps[delivery.appId] else {
            await finish(delivery, .rejected, "the app '\(delivery.appId)' is no longer configured", transportLabel)
            return
        }
        if let reason = Self.skipReason(claimed) {
            await finish(delivery, .superseded, reason, transportLabel)
            return
        }
        guard let transport = router.transport(endpoint.transport) else {
            await finish(
                delivery, .rejected, "the \(endpoint.transport) transport is not enabled on this hub", transportLabel)
            return
        }
        let started = ContinuousClock.now
        let outbound = OutboundDelivery(
            delivery: delivery, endpoint: endpoint, app: app,
            notification: delivery.kind == .shoulderTap ? nil : claimed.notification)
        let outcome = await transport.send(outbound)
        Timer(label: "hub_delivery_duration_seconds", dimensions: [("transport", transportLabel)])
            .recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        Counter(
            label: "hub_deliveries_total", dimensions: [("transport", transportLabel), ("outcome", outcome.label)]
        ).increment()
        switch outcome {
        case .accepted:
            await finish(delivery, .delivered, nil, transportLabel)
        case .rejected(let reason):
            logger.warning(
                "delivery rejected; not retried",
                metadata: ["endpoint": "\(endpoint.id)", "transport": "\(transportLabel)", "reason": "\(reason)"])
            await finish(delivery, .rejected, reason, transportLabel)
        case .endpointGone(let since, let reason):
            logger.info(
                "endpoint gone",
                metadata: ["endpoint": "\(endpoint.id)", "transport": "\(transportLabel)", "reason": "\(reason)"])
            await finish(delivery, .endpointGone, reason, transportLabel, goneSince: since)
        case .retry(let after, let reason):
            await retry(delivery, after: after, reason: reason, transportLabel)
        }
    }

    /// Why a claimed delivery need not be sent any more, if so.
    static func skipReason(_ claimed: ClaimedDelivery) -> String? {
        let delivery = claimed.delivery
        switch delivery.kind {
        case .visible:
            guard let notification = claimed.notification, notification.status == .active else {
                return "the notification is no longer active"
            }
        case .fallback:
            guard let notification = claimed.notification, notification.status == .active,
                notification.readState == .unread, notification.userActionState == .noInteraction
            else { return "the notification was handled on a device" }
            if let synced = claimed.endpoint.lastSyncAt, synced >= delivery.createdAt {
                return "the endpoint synced in time"
            }
        default:
            break
        }
        return nil
    }

    private func retry(_ delivery: Delivery, after: Duration?, reason: String, _ transport: String) async {
        let current = now()
        let age = current.timeIntervalSince(delivery.createdAt)
        if delivery.attempts >= configuration.maxAttempts || age >= configuration.maxAge.seconds {
            let why = "gave up after \(delivery.attempts) attempts over \(Int(age)) s; last error: \(reason)"
            logger.warning("delivery given up", metadata: ["endpoint": "\(delivery.endpointId)", "reason": "\(why)"])
            await finish(delivery, .gaveUp, why, transport)
            return
        }
        let delay = Self.backoff(attempt: delivery.attempts, retryAfter: after, configuration: configuration)
        do {
            try await store.retryDelivery(
                id: delivery.id, dueAt: current.addingTimeInterval(delay.seconds), error: reason, at: current)
        } catch {
            logger.error("recording a retry failed", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
        }
    }

    /// Exponential back-off with ±20 % jitter; a provider's `Retry-After` is a floor.
    static func backoff(attempt: Int, retryAfter: Duration?, configuration: DispatcherConfiguration) -> Duration {
        let exponent = Double(max(0, min(attempt - 1, 30)))
        let base = min(configuration.initialBackoff.seconds * pow(2, exponent), configuration.maxBackoff.seconds)
        let jittered = base * Double.random(in: 0.8...1.2)
        let floor = retryAfter?.seconds ?? 0
        return .milliseconds(Int64(max(jittered, floor) * 1000))
    }

    private func finish(
        _ delivery: Delivery, _ result: DeliveryResult, _ detail: String?, _ transport: String, goneSince: Date? = nil
    ) async {
        do {
            try await store.finishDelivery(
                id: delivery.id, result: result, detail: detail, goneSince: goneSince, at: now())
        } catch {
            // The lease expires and the delivery is tried again: at-least-once.
            logger.error("recording a delivery failed", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
