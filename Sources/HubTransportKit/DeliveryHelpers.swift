public import HubCore
public import Logging
import ServiceLifecycle
import Synchronization

public import struct Foundation.Date

// What the first-party push transports (APNs, FCM, WNS, Web Push) all do the same way, written
// once, and public: an outside author's transport uses the same helpers.

extension OutboundDelivery {
    /// Whether the provider should deliver it at once: a high-priority notification, or a fallback
    /// (which replaces a tap the device did not act on).
    public var isUrgent: Bool { delivery.priority == .high || delivery.kind == .fallback }

    /// For a visible or fallback delivery: the notification and the visual it shows. `nil` for a
    /// shoulder tap, and for a notification without `visualContent` (the transports send it as a tap:
    /// a device syncs its feed to learn what changed).
    public var shown: (notification: UserNotification, visual: VisualContent)? {
        guard delivery.kind != .shoulderTap, let notification, let visual = notification.payload.visualContent else {
            return nil
        }
        return (notification, visual)
    }
}

extension UserNotification {
    /// The whole seconds left at `now` until it expires; 0 once it has: a provider's time to live.
    /// - Parameter now: the current time, from the hub's clock (`TransportContext.clock`).
    public func secondsToExpiry(now: Date) -> Int {
        max(0, Int(expirationDateTime.timeIntervalSince(now).rounded(.down)))
    }
}

extension Transport {
    /// Waits for graceful shutdown (after the hub has drained), then runs `close`. A failure to
    /// close is logged as a warning naming `provider`, not thrown: it must not fail the shutdown of
    /// `hub serve`. Call it from the transport's `run()`.
    /// - Parameters:
    ///   - provider: the provider's name for the warning ("APNs").
    ///   - logger: where the warning goes (`TransportContext.logger`).
    ///   - close: closes the transport's connections or client.
    public func closeAfterGracefulShutdown(
        _ provider: String, logger: Logger, close: () async throws -> Void
    ) async {
        try? await gracefulShutdown()
        do {
            try await close()
        } catch {
            logger.warning("closing the \(provider) connections failed", metadata: ["error": "\(error)"])
        }
    }
}

/// The configuration problems a transport has already logged, so that each is logged once, not once
/// per delivery: a missing credential is logged at its first delivery, and the later ones are only
/// counted in the outcome.
///
/// ```swift
/// problems.once("credentials:\(delivery.app.id)") {
///     logger.error("no credentials for this transport", metadata: ["app": "\(delivery.app.id)"])
/// }
/// ```
public final class ProblemLog: Sendable {
    private let seen = Mutex<Set<String>>([])

    /// An empty log: every key is new.
    public init() {}

    /// Runs `log` the first time `key` is seen.
    /// - Parameters:
    ///   - key: what the problem is about (the app and the problem, say).
    ///   - log: writes the log message; not run for a key already seen.
    public func once(_ key: String, _ log: () -> Void) {
        if seen.withLock({ $0.insert(key).inserted }) { log() }
    }
}
