public import Foundation
import Synchronization

/// What the hub holds about one user, as `GET /v1/apps/{app}/users/{userId}/export` shows it
/// (``Hub/exportUser(app:user:by:)``).
public struct UserExport: Sendable, Hashable {
    /// One notification as the publisher's history shows it, with its receipts as
    /// `GET …/notifications/{id}/deliveries` shows them.
    public struct Notification: Sendable, Hashable {
        public var notification: UserNotification
        public var receipts: [DeliveryReceipt]

        /// - Parameters:
        ///   - notification: the notification, rendered for the publisher.
        ///   - receipts: one receipt per endpoint of the user.
        public init(notification: UserNotification, receipts: [DeliveryReceipt]) {
            self.notification = notification
            self.receipts = receipts
        }
    }

    public var appId: String
    public var userId: String
    /// When the export was read.
    public var exportedAt: Date
    /// Every notification, newest first (tombstones and scheduled ones included).
    public var notifications: [Notification]
    /// The store's record: endpoints (tokens unmasked: the API masks them), tags, every delivery,
    /// the broadcasts that list the user.
    public var record: UserRecord

    /// - Parameters:
    ///   - appId: the app.
    ///   - userId: the user.
    ///   - exportedAt: when it was read.
    ///   - notifications: the notifications with their receipts, newest first.
    ///   - record: what the store read.
    public init(appId: String, userId: String, exportedAt: Date, notifications: [Notification], record: UserRecord) {
        self.appId = appId
        self.userId = userId
        self.exportedAt = exportedAt
        self.notifications = notifications
        self.record = record
    }
}

/// What an erasure did (``Hub/eraseUser(app:user:by:tapTimeout:)``).
public struct UserErasureReport: Sendable, Hashable {
    /// The rows removed, by kind.
    public var erased: UserErasure
    /// Push endpoints whose provider took the erasure tap before the rows went.
    public var devicesTapped: Int
    /// Push endpoints whose provider refused the tap or failed (the device keeps its copies
    /// until the app clears them).
    public var devicesNotReached: Int
    /// Push endpoints whose provider had not answered when the tap timeout ran out.
    public var devicesUnanswered: Int
    /// Polling endpoints woken (their waiting long-polls and streams answer with an empty feed).
    public var pollingWoken: Int

    /// - Parameters:
    ///   - erased: the rows removed.
    ///   - devicesTapped: taps the providers took.
    ///   - devicesNotReached: taps refused or failed.
    ///   - devicesUnanswered: taps unanswered at the timeout.
    ///   - pollingWoken: polling endpoints woken.
    public init(
        erased: UserErasure, devicesTapped: Int = 0, devicesNotReached: Int = 0, devicesUnanswered: Int = 0,
        pollingWoken: Int = 0
    ) {
        self.erased = erased
        self.devicesTapped = devicesTapped
        self.devicesNotReached = devicesNotReached
        self.devicesUnanswered = devicesUnanswered
        self.pollingWoken = pollingWoken
    }
}

extension UserErasure {
    /// The feed version an erasure tap announces. No change has it (versions start at 1), so a
    /// client that finds it in a tap (`"v": 0`) knows the user was erased and drops its local
    /// copies; an older client just syncs an empty feed.
    public static let tapVersion: Int64 = 0
}

extension Hub {
    /// How long an erasure waits for the providers to take its taps, by default.
    public static let erasureTapTimeout: Duration = .seconds(5)

    /// Everything the hub holds about the user, read in one store transaction, and audited in the
    /// log (who, when, how much; never the content).
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - caller: who asked (`publisher <name>` or `admin`), for the audit line.
    /// - Throws: ``HubError`` `not-found` for an unknown app, `invalid-request` for a malformed user ID.
    public func exportUser(app appID: String, user userID: String, by caller: String) async throws -> UserExport {
        let key = try feedKey(appID, userID)
        let record = try await store.exportUser(key)
        let exportedAt = now()
        let view = NotificationView(now: exportedAt, reader: .publisher)
        let router = router
        let notifications = record.traces.map { trace in
            UserExport.Notification(
                notification: view.render(trace.notification),
                receipts: DeliveryReceipt.receipts(trace, endpoints: record.endpoints) { router.wakesInProcess($0) })
        }
        logger.notice(
            "user data exported",
            metadata: [
                "audit": "export", "app": "\(key.appId)", "user": "\(key.userId)", "by": "\(caller)",
                "at": "\(exportedAt.ISO8601Format())", "notifications": "\(record.notifications.count)",
                "endpoints": "\(record.endpoints.count)", "tags": "\(record.tags.count)",
                "deliveries": "\(record.deliveries.count)", "broadcasts": "\(record.broadcasts.count)",
            ])
        return UserExport(
            appId: key.appId, userId: key.userId, exportedAt: exportedAt, notifications: notifications, record: record)
    }

    /// Erases everything the hub holds about the user, in one store transaction
    /// (``UserDataStore/eraseUser(_:at:)``), and audits it in the log (who, when, counts).
    ///
    /// First, while the endpoints still exist, every active push endpoint gets an erasure tap (a
    /// shoulder tap announcing ``UserErasure/tapVersion``), sent straight to its transport and not
    /// through the outbox (whose rows go with the user): a device that gets it drops its local
    /// copies (HubClient does). The erasure waits for the providers' answers at most
    /// `tapTimeout`, then erases whatever they said; a tap is not retried. Polling endpoints are
    /// woken after the erasure: their long-polls answer with the now empty feed.
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - caller: who asked (`publisher <name>` or `admin`), for the audit line.
    ///   - tapTimeout: how long to wait for the providers to take the taps.
    /// - Throws: ``HubError`` `not-found` for an unknown app, `invalid-request` for a malformed
    ///   user ID; a store error leaves every row in place (and is logged as a failed erasure).
    public func eraseUser(
        app appID: String, user userID: String, by caller: String, tapTimeout: Duration = Hub.erasureTapTimeout
    ) async throws -> UserErasureReport {
        let key = try feedKey(appID, userID)
        let app = try app(appID)
        let endpoints = try await store.endpoints(key).filter { $0.state == .active }
        let polling = endpoints.filter { router.wakesInProcess($0.transport) }
        var report = await tapBeforeErasing(
            endpoints.filter { !router.wakesInProcess($0.transport) }, key: key, app: app, timeout: tapTimeout)
        do {
            report.erased = try await store.eraseUser(key, at: now())
        } catch {
            logger.warning(
                "erasing user data failed; nothing was erased",
                metadata: [
                    "audit": "erase", "app": "\(key.appId)", "user": "\(key.userId)", "by": "\(caller)",
                    "at": "\(now().ISO8601Format())", "error": "\(error)",
                ])
            throw error
        }
        recordedSyncs.withLock { recorded in recorded = recorded.filter { $0.key.key != key } }
        signals.announce(key, .feed)
        for endpoint in polling { report.pollingWoken += signals.announce(key, .endpoint(endpoint.id)) > 0 ? 1 : 0 }
        logger.notice(
            "user data erased",
            metadata: [
                "audit": "erase", "app": "\(key.appId)", "user": "\(key.userId)", "by": "\(caller)",
                "at": "\(now().ISO8601Format())", "notifications": "\(report.erased.notifications)",
                "endpoints": "\(report.erased.endpoints)", "tags": "\(report.erased.tags)",
                "deliveries": "\(report.erased.deliveries)", "broadcasts": "\(report.erased.broadcasts)",
                "devicesTapped": "\(report.devicesTapped)", "devicesNotReached": "\(report.devicesNotReached)",
                "devicesUnanswered": "\(report.devicesUnanswered)",
            ])
        return report
    }

    /// Sends the erasure tap to each endpoint at once and counts the answers that come within
    /// `timeout` (on the hub's clock); sends still in flight then are left to finish on their own.
    private func tapBeforeErasing(
        _ endpoints: [Endpoint], key: FeedKey, app: CrossDeviceApp, timeout: Duration
    ) async -> UserErasureReport {
        let at = now()
        let sends = endpoints.compactMap { endpoint -> (any Transport, OutboundDelivery)? in
            guard let transport = router.transport(endpoint.transport) else { return nil }
            let delivery = Delivery(
                id: 0, appId: key.appId, userId: key.userId, endpointId: endpoint.id, kind: .shoulderTap,
                notificationId: nil, changeVersion: UserErasure.tapVersion, priority: .high, createdAt: at, dueAt: at)
            return (transport, OutboundDelivery(delivery: delivery, endpoint: endpoint, app: app, notification: nil))
        }
        var report = UserErasureReport(erased: UserErasure(), devicesUnanswered: sends.count)
        guard !sends.isEmpty else { return report }
        let (answers, continuation) = AsyncStream<DeliveryOutcome>.makeStream()
        for (transport, outbound) in sends {
            Task { continuation.yield(await transport.transmit(outbound).outcome) }
        }
        let clock = self.clock
        let deadline = Task {
            try? await clock.sleep(for: timeout)
            continuation.finish()
        }
        defer { deadline.cancel() }
        for await outcome in answers {
            report.devicesUnanswered -= 1
            if case .accepted = outcome { report.devicesTapped += 1 } else { report.devicesNotReached += 1 }
            if report.devicesUnanswered == 0 { break }
        }
        continuation.finish()
        return report
    }
}
