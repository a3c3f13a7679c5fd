import Foundation
import Testing

@testable import HubCore

@Suite("Delivery receipts: which deliveries concern a notification, and their states")
struct DeliveryReceiptTests {
    static let t0 = Date(timeIntervalSince1970: 1_750_000_000)

    static func trace(
        _ id: Int64, endpoint: String = "e1", kind: DeliveryKind = .shoulderTap, notification: String? = "n1",
        version: Int64, result: DeliveryResult? = nil, attempts: Int = 1, lastError: String? = nil,
        suspended: String? = nil, inFlight: Bool = false
    ) -> DeliveryTrace {
        DeliveryTrace(
            delivery: Delivery(
                id: id, appId: "a", userId: "u", endpointId: endpoint, kind: kind, notificationId: notification,
                changeVersion: version, priority: .none, attempts: attempts, createdAt: t0,
                dueAt: t0.addingTimeInterval(30),
                lastError: lastError),
            transport: .apns, result: result, detail: result == .endpointGone ? "Unregistered" : nil,
            suspendedReason: suspended, inFlight: inFlight, firstSentAt: t0, lastSentAt: t0,
            finishedAt: result == nil ? nil : t0.addingTimeInterval(1), providerMessageId: "m\(id)")
    }

    static let notification = UserNotification(
        id: "n1", appId: "a", userId: "u", appNotificationId: "n1", payload: NotificationPayload(rawContent: "x"),
        targetPolicy: TargetPolicy(platformTypes: [.ios, .web]), expirationDateTime: t0.addingTimeInterval(3600),
        createdDateTime: t0, lastModifiedDateTime: t0, changeVersion: 10)

    static func endpoint(_ id: String, platform: Platform = .ios, transport: TransportID = .apns) -> Endpoint {
        Endpoint(
            id: id, appId: "a", userId: "u", platform: platform, platformAppId: "x", transport: transport,
            token: "t", registeredAt: t0.addingTimeInterval(-60))
    }

    @Test("the first tap at or after the published version, passing over a superseded one, then the fallback")
    func tapAndFallback() {
        let rows = [
            Self.trace(1, version: 9, result: .delivered),  // before the publish
            Self.trace(2, version: 10, result: .superseded),  // replaced by 3
            Self.trace(3, version: 12, result: .delivered),
            Self.trace(4, version: 15, result: .delivered),  // a later change
            Self.trace(5, kind: .fallback, version: 10, result: .delivered),
            Self.trace(6, kind: .visible, notification: "other", version: 11, result: .delivered),
        ]
        let picked = DeliveryReceipt.rows(of: Self.notification, in: rows, publishedVersion: 10)
        #expect(picked.map(\.delivery.id) == [3, 5])
        let receipt = DeliveryReceipt.receipts(
            NotificationTrace(
                notification: Self.notification, publishedVersion: 10, readBy: "e1", readAt: Self.t0, dismissedBy: nil,
                dismissedAt: nil, deliveries: rows),
            endpoints: [Self.endpoint("e1")], wakesInProcess: { _ in false }
        ).first
        #expect(receipt?.latest?.kind == .fallback)
        #expect(receipt?.earlier.map(\.deliveryId) == [3])
        #expect(receipt?.readAt == Self.t0)
        #expect(receipt?.latest?.providerMessageId == "m5")
        #expect(receipt?.latest?.acceptedAt == Self.t0.addingTimeInterval(1))
    }

    @Test("states: pending, in flight, retrying, suspended, gone, and why nothing was sent")
    func states() {
        #expect(ReceiptState(Self.trace(1, version: 1, attempts: 0)) == .pending)
        #expect(ReceiptState(Self.trace(1, version: 1, lastError: "503", inFlight: true)) == .pending)
        let retrying = DeliveryReceipt.Attempt(Self.trace(1, version: 1, lastError: "503"))
        #expect(retrying.state == .retrying)
        #expect(retrying.lastOutcome == "retry" && retrying.reason == "503")
        #expect(retrying.nextAttemptAt == Self.t0.addingTimeInterval(30))
        #expect(ReceiptState(Self.trace(1, version: 1, lastError: "403", suspended: "403")) == .suspended)
        let gone = DeliveryReceipt.Attempt(Self.trace(1, version: 1, result: .endpointGone))
        #expect(gone.state == .gone && gone.reason == "Unregistered" && gone.acceptedAt == nil)

        let trace = NotificationTrace(
            notification: Self.notification, publishedVersion: 10, readBy: nil, readAt: nil, dismissedBy: nil,
            dismissedAt: nil, deliveries: [])
        let receipts = DeliveryReceipt.receipts(
            trace,
            endpoints: [
                Self.endpoint("android", platform: .android, transport: .fcm),
                Self.endpoint("browser", platform: .web, transport: .polling), Self.endpoint("phone"),
            ], wakesInProcess: { $0 == .polling })
        #expect(receipts.map(\.state) == [.none, .none, .none])
        #expect(receipts[0].reason?.contains("does not target android") == true)
        #expect(receipts[1].reason?.contains("in process") == true)
        #expect(receipts[2].reason?.contains("no delivery is on record") == true)
    }
}
