import Foundation
import GRDB
import HubCore

// MARK: - Deliveries

/// A row of the `delivery` table: a ``Delivery`` plus the outbox bookkeeping.
struct DeliveryRecord: FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "delivery"

    /// `pending` until a final outcome is recorded, then `finished`.
    enum State: String {
        case pending, finished
    }

    var id: Int64?
    var appId: String
    var userId: String
    var endpointId: String
    /// The endpoint's transport when the delivery was enqueued (for statistics).
    var transport: TransportID
    var kind: DeliveryKind
    var notificationId: String?
    var changeVersion: Int64
    var priority: NotificationPriority
    var state: State = .pending
    var leaseOwner: String?
    var leaseUntil: Date?
    /// When the current (or last) lease was taken.
    var claimedAt: Date?
    var attempts: Int = 0
    var createdAt: Date
    var dueAt: Date
    var lastError: String?
    var result: DeliveryResult?
    var detail: String?
    var finishedAt: Date?
    /// Set while the delivery is parked for a configuration fault: pending, but not claimed.
    var suspendedAt: Date?
    var suspendedReason: String?
    /// The first lease's `claimedAt`, kept when an outcome is recorded (a later claim moves `claimedAt`).
    var firstSentAt: Date?
    /// The provider's ID of the message, from the latest answer that carried one.
    var providerMessageId: String?

    /// A new pending delivery to `endpoint`.
    init(
        to endpoint: Endpoint, kind: DeliveryKind, notificationId: String?, changeVersion: Int64,
        priority: NotificationPriority, createdAt: Date, dueAt: Date
    ) {
        appId = endpoint.appId
        userId = endpoint.userId
        endpointId = endpoint.id
        transport = endpoint.transport
        self.kind = kind
        self.notificationId = notificationId
        self.changeVersion = changeVersion
        self.priority = priority
        self.createdAt = createdAt
        self.dueAt = dueAt
    }

    init(row: Row) {
        id = row["id"]
        appId = row["appId"]
        userId = row["userId"]
        endpointId = row["endpointId"]
        transport = TransportID(rawValue: row["transport"])
        kind = DeliveryKind(rawValue: row["kind"])
        notificationId = row["notificationId"]
        changeVersion = row["changeVersion"]
        priority = NotificationPriority(rawValue: row["priority"])
        state = State(rawValue: row["state"]) ?? .finished
        leaseOwner = row["leaseOwner"]
        leaseUntil = row.optionalDate("leaseUntil")
        claimedAt = row.optionalDate("claimedAt")
        attempts = row["attempts"]
        createdAt = row.date("createdAt")
        dueAt = row.date("dueAt")
        lastError = row["lastError"]
        result = (row["result"] as String?).map(DeliveryResult.init(rawValue:))
        detail = row["detail"]
        finishedAt = row.optionalDate("finishedAt")
        suspendedAt = row.optionalDate("suspendedAt")
        suspendedReason = row["suspendedReason"]
        firstSentAt = row.optionalDate("firstSentAt")
        providerMessageId = row["providerMessageId"]
    }

    /// The columns ``init(positional:)`` reads, in its order.
    static let positionalColumns = [
        "id", "appId", "userId", "endpointId", "transport", "kind", "notificationId", "changeVersion", "priority",
        "state", "leaseOwner", "leaseUntil", "claimedAt", "attempts", "createdAt", "dueAt", "lastError", "result",
        "detail", "finishedAt", "suspendedAt", "suspendedReason", "firstSentAt", "providerMessageId",
    ]

    /// A row of ``positionalColumns``, read by position. Every claim reads its rows this way:
    /// looking each of the 24 columns up by name (and lower-casing the camel-case names first, as
    /// GRDB does) was a few per cent of the hub's CPU under load.
    init(positional row: Row) {
        id = row[0]
        appId = row[1]
        userId = row[2]
        endpointId = row[3]
        transport = TransportID(rawValue: row[4])
        kind = DeliveryKind(rawValue: row[5])
        notificationId = row[6]
        changeVersion = row[7]
        priority = NotificationPriority(rawValue: row[8])
        state = State(rawValue: row[9]) ?? .finished
        leaseOwner = row[10]
        leaseUntil = (row[11] as Double?).map(Date.init(storedSeconds:))
        claimedAt = (row[12] as Double?).map(Date.init(storedSeconds:))
        attempts = row[13]
        createdAt = Date(storedSeconds: row[14])
        dueAt = Date(storedSeconds: row[15])
        lastError = row[16]
        result = (row[17] as String?).map(DeliveryResult.init(rawValue:))
        detail = row[18]
        finishedAt = (row[19] as Double?).map(Date.init(storedSeconds:))
        suspendedAt = (row[20] as Double?).map(Date.init(storedSeconds:))
        suspendedReason = row[21]
        firstSentAt = (row[22] as Double?).map(Date.init(storedSeconds:))
        providerMessageId = row[23]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["appId"] = appId
        container["userId"] = userId
        container["endpointId"] = endpointId
        container["transport"] = transport.rawValue
        container["kind"] = kind.rawValue
        container["notificationId"] = notificationId
        container["changeVersion"] = changeVersion
        container["priority"] = priority.rawValue
        container["urgency"] = priority.urgency
        container["state"] = state.rawValue
        container["leaseOwner"] = leaseOwner
        container["leaseUntil"] = leaseUntil?.storedSeconds
        container["claimedAt"] = claimedAt?.storedSeconds
        container["attempts"] = attempts
        container["createdAt"] = createdAt.storedSeconds
        container["dueAt"] = dueAt.storedSeconds
        container["lastError"] = lastError
        container["result"] = result?.rawValue
        container["detail"] = detail
        container["finishedAt"] = finishedAt?.storedSeconds
        container["suspendedAt"] = suspendedAt?.storedSeconds
        container["suspendedReason"] = suspendedReason
        container["firstSentAt"] = firstSentAt?.storedSeconds
        container["providerMessageId"] = providerMessageId
    }

    /// The receipt's view of this row.
    var trace: DeliveryTrace {
        DeliveryTrace(
            delivery: delivery, transport: transport, result: state == .finished ? result : nil, detail: detail,
            suspendedReason: state == .pending ? suspendedReason : nil,
            inFlight: state == .pending && leaseOwner != nil,
            firstSentAt: firstSentAt ?? claimedAt, lastSentAt: claimedAt, finishedAt: finishedAt,
            providerMessageId: providerMessageId)
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The HubCore view of this row.
    var delivery: Delivery {
        Delivery(
            id: id ?? 0, appId: appId, userId: userId, endpointId: endpointId, kind: kind,
            notificationId: notificationId, changeVersion: changeVersion, priority: priority, attempts: attempts,
            createdAt: createdAt, dueAt: dueAt, lastError: lastError)
    }
}
