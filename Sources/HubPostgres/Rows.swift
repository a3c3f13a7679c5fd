import Foundation
import HubCore
import PostgresNIO

// How HubCore values map to rows of the schema (see `PostgresStore+Migrations.swift`).
//
// Conventions:
// - Columns are snake_case versions of the Swift property names.
// - Open enumerations (`ReadState`, `TransportID`, …) are stored as their raw strings.
// - Times are `timestamptz`: microsecond precision. Writes return the rows as the database
//   stored them (`RETURNING`), so a value returned by a write equals the value read back later.
// - `payload` and `targetPolicy` are `jsonb`; `fallbackPolicy` is its timeout in seconds.

/// A Codable value stored in a `jsonb` column.
struct JSONColumn<Value: Codable & Sendable>: Codable, Sendable, PostgresCodable {
    var value: Value
    init(_ value: Value) { self.value = value }
    init(from decoder: any Decoder) throws { value = try Value(from: decoder) }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

extension NotificationPriority {
    /// Claim order of a delivery: higher is sent first. Unknown priorities rank like `none`.
    var urgency: Int16 {
        switch self {
        case .high: 2
        case .low: 1
        default: 0
        }
    }
}

extension PostgresRandomAccessRow {
    /// The value of `column`, decoded as `T` (optional types accept NULL).
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        try self[column].decode(T.self)
    }
}

// MARK: - Notifications

enum NotificationColumns {
    /// The columns a notification is read from, in `SELECT` and `RETURNING` lists.
    static let list = """
        app_id, user_id, id, app_notification_id, group_name, priority, payload, target_policy,
        display_time_to_live, expiration_date_time, fallback_timeout_seconds, delivery_mode, created_date_time,
        last_modified_date_time, read_state, user_action_state, status, change_version
        """
}

extension UserNotification {
    /// Reads a row selected with ``NotificationColumns/list``.
    init(row: PostgresRow) throws {
        let row = row.makeRandomAccess()
        self.init(
            id: try row.value("id"),
            appId: try row.value("app_id"),
            userId: try row.value("user_id"),
            appNotificationId: try row.value("app_notification_id"),
            groupName: try row.value("group_name"),
            priority: NotificationPriority(rawValue: try row.value("priority")),
            payload: try row.value("payload", as: JSONColumn<NotificationPayload>.self).value,
            targetPolicy: try row.value("target_policy", as: JSONColumn<TargetPolicy>.self).value,
            displayTimeToLive: try row.value("display_time_to_live"),
            expirationDateTime: try row.value("expiration_date_time"),
            fallbackPolicy: try row.value("fallback_timeout_seconds", as: Int?.self)
                .map(FallbackPolicy.init(timeoutSeconds:)),
            deliveryMode: try row.value("delivery_mode", as: String?.self).map(DeliveryMode.init(rawValue:)),
            createdDateTime: try row.value("created_date_time"),
            lastModifiedDateTime: try row.value("last_modified_date_time"),
            readState: ReadState(rawValue: try row.value("read_state")),
            userActionState: UserActionState(rawValue: try row.value("user_action_state")),
            status: NotificationStatus(rawValue: try row.value("status")),
            changeVersion: try row.value("change_version"))
    }

    /// Replaces the content fields with the draft's; keeps identity, times and states.
    mutating func apply(_ draft: NotificationDraft, expiration: Date) {
        groupName = draft.groupName
        priority = draft.priority
        payload = draft.payload
        targetPolicy = draft.targetPolicy
        displayTimeToLive = draft.displayTimeToLive
        expirationDateTime = expiration
        fallbackPolicy = draft.fallbackPolicy
        deliveryMode = draft.deliveryMode
    }
}

// MARK: - Endpoints

enum EndpointColumns {
    static let list = """
        app_id, user_id, id, platform, platform_app_id, transport, token, environment, app_display_name, state,
        inactive_reason, inactive_since, registered_at, last_sync_at
        """
}

extension Endpoint {
    /// Reads a row selected with ``EndpointColumns/list``.
    init(row: PostgresRow) throws {
        let row = row.makeRandomAccess()
        self.init(
            id: try row.value("id"),
            appId: try row.value("app_id"),
            userId: try row.value("user_id"),
            platform: Platform(rawValue: try row.value("platform")),
            platformAppId: try row.value("platform_app_id"),
            transport: TransportID(rawValue: try row.value("transport")),
            token: try row.value("token"),
            environment: try row.value("environment", as: String?.self).map(APNSEnvironment.init(rawValue:)),
            appDisplayName: try row.value("app_display_name"),
            state: EndpointState(rawValue: try row.value("state")),
            inactiveReason: try row.value("inactive_reason"),
            inactiveSince: try row.value("inactive_since"),
            registeredAt: try row.value("registered_at"),
            lastSyncAt: try row.value("last_sync_at"))
    }
}

// MARK: - Deliveries

enum DeliveryColumns {
    static let list = """
        id, app_id, user_id, endpoint_id, kind, notification_id, change_version, priority, attempts, created_at,
        due_at, last_error
        """
}

extension Delivery {
    /// Reads a row selected with ``DeliveryColumns/list``.
    init(row: PostgresRow) throws {
        let row = row.makeRandomAccess()
        self.init(
            id: try row.value("id"),
            appId: try row.value("app_id"),
            userId: try row.value("user_id"),
            endpointId: try row.value("endpoint_id"),
            kind: DeliveryKind(rawValue: try row.value("kind")),
            notificationId: try row.value("notification_id"),
            changeVersion: try row.value("change_version"),
            priority: NotificationPriority(rawValue: try row.value("priority")),
            attempts: try row.value("attempts"),
            createdAt: try row.value("created_at"),
            dueAt: try row.value("due_at"),
            lastError: try row.value("last_error"))
    }
}
