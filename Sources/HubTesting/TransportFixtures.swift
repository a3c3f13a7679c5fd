public import Foundation
public import HubCore

// What transport tests build around one send: the delivery the dispatcher would hand over, the
// notification it renders, and shutting the transport and its provider emulator down afterwards.

extension OutboundDelivery {
    /// Delivery 1 of `kind` to `endpoint` (its app and user), created and due now.
    /// - Parameter notification: the notification to render; its id is the delivery's `notificationId`.
    public static func fixture(
        _ kind: DeliveryKind, to endpoint: Endpoint, app: CrossDeviceApp, notification: UserNotification? = nil,
        priority: NotificationPriority = .none, changeVersion: Int64 = 7
    ) -> OutboundDelivery {
        let now = Date()
        let delivery = Delivery(
            id: 1, appId: endpoint.appId, userId: endpoint.userId, endpointId: endpoint.id, kind: kind,
            notificationId: notification?.id, changeVersion: changeVersion, priority: priority, createdAt: now,
            dueAt: now)
        return OutboundDelivery(delivery: delivery, endpoint: endpoint, app: app, notification: notification)
    }
}

extension UserNotification {
    /// Notification `n-1` of `alice` in `appId` that shows `visual`, created at `now` and expiring
    /// `lifetime` seconds later.
    public static func fixture(
        _ visual: VisualContent, appId: String, appNotificationId: String, groupName: String? = nil,
        now: Date = Date(), lifetime: TimeInterval = 3600
    ) -> UserNotification {
        UserNotification(
            id: "n-1", appId: appId, userId: "alice", appNotificationId: appNotificationId, groupName: groupName,
            payload: NotificationPayload(visualContent: visual), expirationDateTime: now.addingTimeInterval(lifetime),
            createdDateTime: now, lastModifiedDateTime: now)
    }
}

/// Runs `body`, then each of `shutdowns` in order, also when `body` throws (then their errors are
/// dropped and `body`'s is thrown): a transport and the emulator it talks to, say.
public func withShutdown<Result>(
    _ shutdowns: [() async throws -> Void], body: () async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body()
    } catch {
        for shutdown in shutdowns { try? await shutdown() }
        throw error
    }
    for shutdown in shutdowns { try await shutdown() }
    return result
}
