import Foundation
import HubCore

/// `GET …/notifications/{id}/deliveries`: what became of one notification on each of its user's
/// devices (``DeliveryReceipt``). Fields without a value are left out.
struct DeliveryReceiptList: Encodable, Sendable {
    var notificationId: String
    var appNotificationId: String
    var status: String
    var createdDateTime: Date
    var deliveries: [DeliveryReceiptResource]

    init(notification: UserNotification, receipts: [DeliveryReceipt]) {
        notificationId = notification.id
        appNotificationId = notification.appNotificationId
        status = notification.status.rawValue
        createdDateTime = notification.createdDateTime
        deliveries = receipts.map(DeliveryReceiptResource.init)
    }
}

/// One endpoint's row: the device, its latest delivery of the notification at the top level, the
/// earlier ones in `earlier`, and what the device did.
struct DeliveryReceiptResource: Encodable, Sendable {
    var endpointId: String
    var platform: String
    var transport: String
    var appDisplayName: String?
    var endpointState: String
    var state: String
    /// With state `none`: why no delivery was made.
    var note: String?
    var kind: String?
    var deliveryId: Int64?
    var attempts: Int?
    var lastOutcome: String?
    var reason: String?
    var providerMessageId: String?
    var enqueuedDateTime: Date?
    var sentDateTime: Date?
    var acceptedDateTime: Date?
    var finishedDateTime: Date?
    var nextAttemptDateTime: Date?
    var earlier: [DeliveryAttemptResource]?
    var lastSyncDateTime: Date?
    var syncedSincePublish: Bool
    var readDateTime: Date?
    var dismissedDateTime: Date?

    init(_ receipt: DeliveryReceipt) {
        endpointId = receipt.endpointId
        platform = receipt.platform.rawValue
        transport = receipt.transport.rawValue
        appDisplayName = receipt.appDisplayName
        endpointState = receipt.endpointState.rawValue
        state = receipt.state.rawValue
        note = receipt.latest == nil ? receipt.reason : nil
        if let latest = receipt.latest {
            let attempt = DeliveryAttemptResource(latest)
            kind = attempt.kind
            deliveryId = attempt.deliveryId
            attempts = attempt.attempts
            lastOutcome = attempt.lastOutcome
            reason = attempt.reason
            providerMessageId = attempt.providerMessageId
            enqueuedDateTime = attempt.enqueuedDateTime
            sentDateTime = attempt.sentDateTime
            acceptedDateTime = attempt.acceptedDateTime
            finishedDateTime = attempt.finishedDateTime
            nextAttemptDateTime = attempt.nextAttemptDateTime
        }
        earlier = receipt.earlier.isEmpty ? nil : receipt.earlier.map(DeliveryAttemptResource.init)
        lastSyncDateTime = receipt.lastSyncAt
        syncedSincePublish = receipt.syncedSincePublish
        readDateTime = receipt.readAt
        dismissedDateTime = receipt.dismissedAt
    }
}

/// One delivery to a device: `tap` (a content-free "sync your feed"), `visible` or `fallback`.
struct DeliveryAttemptResource: Encodable, Sendable {
    var deliveryId: Int64
    var kind: String
    var state: String
    var attempts: Int
    var lastOutcome: String?
    var reason: String?
    var providerMessageId: String?
    var enqueuedDateTime: Date
    var sentDateTime: Date?
    var acceptedDateTime: Date?
    var finishedDateTime: Date?
    var nextAttemptDateTime: Date?

    init(_ attempt: DeliveryReceipt.Attempt) {
        deliveryId = attempt.deliveryId
        kind = attempt.kind == .shoulderTap ? "tap" : attempt.kind.rawValue
        state = attempt.state.rawValue
        attempts = attempt.attempts
        lastOutcome = attempt.lastOutcome
        reason = attempt.reason
        providerMessageId = attempt.providerMessageId
        enqueuedDateTime = attempt.enqueuedAt
        sentDateTime = attempt.sentAt
        acceptedDateTime = attempt.acceptedAt
        finishedDateTime = attempt.finishedAt
        nextAttemptDateTime = attempt.nextAttemptAt
    }
}
