import Foundation
import GRDB
import HubCore

// How HubCore values map to rows of the SQLite schema (see `SQLiteStore+Migrations.swift`).
//
// Conventions:
// - Times are REAL seconds since 1970 (`Date.timeIntervalSince1970`), never GRDB's default text
//   encoding, so that ranges (`dueAt <= ?`) compare numerically and sub-millisecond precision is kept.
// - Open enumerations (`ReadState`, `TransportID`, …) are stored as their raw strings.
// - `payload` and `targetPolicy` are JSON text; `fallbackPolicy` is its timeout in seconds.

// MARK: - Times

extension Date {
    /// The stored form of a time: seconds since 1970.
    var storedSeconds: Double { timeIntervalSince1970 }

    /// A time read back from the database.
    init(storedSeconds: Double) { self.init(timeIntervalSince1970: storedSeconds) }

    /// The time as the store would return it after a round trip through the database.
    var canonical: Date { Date(storedSeconds: storedSeconds) }
}

extension Row {
    /// A required time column.
    func date(_ column: String) -> Date { Date(storedSeconds: self[column]) }

    /// An optional time column.
    func optionalDate(_ column: String) -> Date? {
        (self[column] as Double?).map(Date.init(storedSeconds:))
    }
}

// MARK: - JSON columns

/// Encodes and decodes the JSON text columns.
enum JSONColumn {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from text: String) throws -> Value {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

// MARK: - Priorities

extension NotificationPriority {
    /// Claim order of a delivery: higher is sent first. Unknown priorities rank like `none`.
    var urgency: Int {
        switch self {
        case .high: 2
        case .low: 1
        default: 0
        }
    }

    /// The more urgent of two priorities.
    func higher(_ other: NotificationPriority) -> NotificationPriority {
        other.urgency > urgency ? other : self
    }
}

// MARK: - Notifications

/// A row of the `notification` table.
struct NotificationRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "notification"
    var notification: UserNotification

    init(_ notification: UserNotification) { self.notification = notification }

    init(row: Row) throws {
        let fallbackSeconds: Int? = row["fallbackTimeoutSeconds"]
        notification = UserNotification(
            id: row["id"],
            appId: row["appId"],
            userId: row["userId"],
            appNotificationId: row["appNotificationId"],
            groupName: row["groupName"],
            priority: NotificationPriority(rawValue: row["priority"]),
            payload: try JSONColumn.decode(NotificationPayload.self, from: row["payload"]),
            targetPolicy: try JSONColumn.decode(TargetPolicy.self, from: row["targetPolicy"]),
            displayTimeToLive: row["displayTimeToLive"],
            expirationDateTime: row.date("expirationDateTime"),
            fallbackPolicy: fallbackSeconds.map(FallbackPolicy.init(timeoutSeconds:)),
            deliveryMode: (row["deliveryMode"] as String?).map(DeliveryMode.init(rawValue:)),
            createdDateTime: row.date("createdDateTime"),
            lastModifiedDateTime: row.date("lastModifiedDateTime"),
            readState: ReadState(rawValue: row["readState"]),
            userActionState: UserActionState(rawValue: row["userActionState"]),
            status: NotificationStatus(rawValue: row["status"]),
            changeVersion: row["changeVersion"]
        )
    }

    func encode(to container: inout PersistenceContainer) throws {
        let n = notification
        container["appId"] = n.appId
        container["userId"] = n.userId
        container["id"] = n.id
        container["appNotificationId"] = n.appNotificationId
        container["groupName"] = n.groupName
        container["priority"] = n.priority.rawValue
        container["payload"] = try JSONColumn.encode(n.payload)
        container["targetPolicy"] = try JSONColumn.encode(n.targetPolicy)
        container["displayTimeToLive"] = n.displayTimeToLive
        container["expirationDateTime"] = n.expirationDateTime.storedSeconds
        container["fallbackTimeoutSeconds"] = n.fallbackPolicy?.timeoutSeconds
        container["deliveryMode"] = n.deliveryMode?.rawValue
        container["createdDateTime"] = n.createdDateTime.storedSeconds
        container["lastModifiedDateTime"] = n.lastModifiedDateTime.storedSeconds
        container["readState"] = n.readState.rawValue
        container["userActionState"] = n.userActionState.rawValue
        container["status"] = n.status.rawValue
        container["changeVersion"] = n.changeVersion
    }
}

// MARK: - Endpoints

/// A row of the `endpoint` table.
struct EndpointRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "endpoint"
    var endpoint: Endpoint

    init(_ endpoint: Endpoint) { self.endpoint = endpoint }

    init(row: Row) {
        endpoint = Endpoint(
            id: row["id"],
            appId: row["appId"],
            userId: row["userId"],
            platform: Platform(rawValue: row["platform"]),
            platformAppId: row["platformAppId"],
            transport: TransportID(rawValue: row["transport"]),
            token: row["token"],
            environment: (row["environment"] as String?).map(APNSEnvironment.init(rawValue:)),
            appDisplayName: row["appDisplayName"],
            state: EndpointState(rawValue: row["state"]),
            inactiveReason: row["inactiveReason"],
            inactiveSince: row.optionalDate("inactiveSince"),
            registeredAt: row.date("registeredAt"),
            lastSyncAt: row.optionalDate("lastSyncAt")
        )
    }

    func encode(to container: inout PersistenceContainer) {
        let e = endpoint
        container["appId"] = e.appId
        container["userId"] = e.userId
        container["id"] = e.id
        container["platform"] = e.platform.rawValue
        container["platformAppId"] = e.platformAppId
        container["transport"] = e.transport.rawValue
        container["token"] = e.token
        container["environment"] = e.environment?.rawValue
        container["appDisplayName"] = e.appDisplayName
        container["state"] = e.state.rawValue
        container["inactiveReason"] = e.inactiveReason
        container["inactiveSince"] = e.inactiveSince?.storedSeconds
        container["registeredAt"] = e.registeredAt.storedSeconds
        container["lastSyncAt"] = e.lastSyncAt?.storedSeconds
    }
}

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
