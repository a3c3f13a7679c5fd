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
// - `payload` and `targetPolicy` are `jsonb`; `fallbackPolicy` is its timeout in seconds, and the
//   whole policy in `fallback_details` (`jsonb`) when it names platforms or content (version 4).
// - `scheduled_date_time` is set for a notification published scheduled (version 4).

/// A Codable value stored in a `jsonb` column.
struct JSONColumn<Value: Codable & Sendable>: Codable, Sendable, PostgresCodable {
    var value: Value
    init(_ value: Value) { self.value = value }
    init(from decoder: any Decoder) throws { value = try Value(from: decoder) }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

extension NotificationPriority {
    /// Claim order of a delivery (``HubCore/OutboxMachine/urgency(_:)``), as the `urgency` column holds it.
    var urgency: Int16 { Int16(OutboxMachine.urgency(self)) }
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
        last_modified_date_time, read_state, user_action_state, status, change_version, fallback_details,
        scheduled_date_time
        """

    /// Inserts or replaces the notification whose columns but `change_version` are `$1` … `$19`
    /// (``PostgresStore/notificationBindings(_:)``) with the next change version, returning
    /// ``list``. Parameters that may be NULL have a cast, so that their type never depends on a first run.
    static let upsert = """
        INSERT INTO hub_notification (\(list))
        VALUES ($1, $2, $3, $4, $5::text, $6, $7::jsonb, $8::jsonb, $9::bigint, $10, $11::bigint, $12::text,
            $13, $14, $15, $16, $17, nextval('hub_change_version'), $18::jsonb,
            $19::timestamptz)
        ON CONFLICT (app_id, user_id, id) DO UPDATE SET \(replace(published: false))
        RETURNING \(list)
        """
    /// The `DO UPDATE SET` list that replaces every column of a notification but its key with
    /// the row that conflicted (`EXCLUDED`). `published`: the change is a publish, which resets
    /// `published_version` (`NULL`: `change_version`); any other change keeps the version of the
    /// latest publish there before `change_version` moves (the right-hand sides read the old row).
    static func replace(published: Bool) -> String {
        replaceColumns + ", published_version = "
            + (published
                ? "NULL" : "COALESCE(hub_notification.published_version, hub_notification.change_version)")
    }
    private static let replaceColumns = """
        app_notification_id = EXCLUDED.app_notification_id, group_name = EXCLUDED.group_name,
        priority = EXCLUDED.priority, payload = EXCLUDED.payload, target_policy = EXCLUDED.target_policy,
        display_time_to_live = EXCLUDED.display_time_to_live,
        expiration_date_time = EXCLUDED.expiration_date_time,
        fallback_timeout_seconds = EXCLUDED.fallback_timeout_seconds,
        delivery_mode = EXCLUDED.delivery_mode, created_date_time = EXCLUDED.created_date_time,
        last_modified_date_time = EXCLUDED.last_modified_date_time, read_state = EXCLUDED.read_state,
        user_action_state = EXCLUDED.user_action_state, status = EXCLUDED.status,
        change_version = EXCLUDED.change_version, fallback_details = EXCLUDED.fallback_details,
        scheduled_date_time = EXCLUDED.scheduled_date_time
        """
    /// The columns of the table aliased `n`, each renamed `n_<column>`, for statements that join.
    static let joined = aliased(list, table: "n", prefix: Names.joined.prefix)

    /// The column names a row is read by.
    struct Names: Sendable {
        let prefix: String
        let appId, userId, id, appNotificationId, groupName, priority, payload, targetPolicy: String
        let displayTimeToLive, expirationDateTime, fallbackTimeoutSeconds, deliveryMode: String
        let createdDateTime, lastModifiedDateTime, readState, userActionState, status, changeVersion: String
        let fallbackDetails, scheduledDateTime: String

        init(prefix: String) {
            self.prefix = prefix
            appId = prefix + "app_id"
            userId = prefix + "user_id"
            id = prefix + "id"
            appNotificationId = prefix + "app_notification_id"
            groupName = prefix + "group_name"
            priority = prefix + "priority"
            payload = prefix + "payload"
            targetPolicy = prefix + "target_policy"
            displayTimeToLive = prefix + "display_time_to_live"
            expirationDateTime = prefix + "expiration_date_time"
            fallbackTimeoutSeconds = prefix + "fallback_timeout_seconds"
            deliveryMode = prefix + "delivery_mode"
            createdDateTime = prefix + "created_date_time"
            lastModifiedDateTime = prefix + "last_modified_date_time"
            readState = prefix + "read_state"
            userActionState = prefix + "user_action_state"
            status = prefix + "status"
            changeVersion = prefix + "change_version"
            fallbackDetails = prefix + "fallback_details"
            scheduledDateTime = prefix + "scheduled_date_time"
        }

        static let plain = Names(prefix: "")
        static let joined = Names(prefix: "n_")
    }
}

/// `list` qualified by `table` and renamed with `prefix`: `e.id AS e_id, …`.
func aliased(_ list: String, table: String, prefix: String) -> String {
    list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .map { "\(table).\($0) AS \(prefix)\($0)" }.joined(separator: ", ")
}

extension UserNotification {
    /// Reads a row selected with ``NotificationColumns/list`` (or, with `names` = `.joined`, with
    /// ``NotificationColumns/joined``).
    init(row: PostgresRow, _ names: NotificationColumns.Names = .plain) throws {
        try self.init(row: row.makeRandomAccess(), names)
    }

    init(row: PostgresRandomAccessRow, _ names: NotificationColumns.Names = .plain) throws {
        self.init(
            id: try row.value(names.id),
            appId: try row.value(names.appId),
            userId: try row.value(names.userId),
            appNotificationId: try row.value(names.appNotificationId),
            groupName: try row.value(names.groupName),
            priority: NotificationPriority(rawValue: try row.value(names.priority)),
            payload: try row.value(names.payload, as: JSONColumn<NotificationPayload>.self).value,
            targetPolicy: try row.value(names.targetPolicy, as: JSONColumn<TargetPolicy>.self).value,
            displayTimeToLive: try row.value(names.displayTimeToLive),
            expirationDateTime: try row.value(names.expirationDateTime),
            fallbackPolicy: try row.value(names.fallbackDetails, as: JSONColumn<FallbackPolicy>?.self)?.value
                ?? row.value(names.fallbackTimeoutSeconds, as: Int?.self).map { FallbackPolicy(timeoutSeconds: $0) },
            deliveryMode: try row.value(names.deliveryMode, as: String?.self).map(DeliveryMode.init(rawValue:)),
            createdDateTime: try row.value(names.createdDateTime),
            lastModifiedDateTime: try row.value(names.lastModifiedDateTime),
            readState: ReadState(rawValue: try row.value(names.readState)),
            userActionState: UserActionState(rawValue: try row.value(names.userActionState)),
            status: NotificationStatus(rawValue: try row.value(names.status)),
            changeVersion: try row.value(names.changeVersion),
            scheduledDateTime: try row.value(names.scheduledDateTime))
    }

}

// MARK: - Endpoints

enum EndpointColumns {
    static let list = """
        app_id, user_id, id, platform, platform_app_id, transport, token, environment, app_display_name, state,
        inactive_reason, inactive_since, registered_at, last_sync_at
        """
    /// The columns of the table aliased `e`, each renamed `e_<column>`, for statements that join.
    static let joined = aliased(list, table: "e", prefix: Names.joined.prefix)

    /// The column names a row is read by.
    struct Names: Sendable {
        let prefix: String
        let appId, userId, id, platform, platformAppId, transport, token, environment, appDisplayName: String
        let state, inactiveReason, inactiveSince, registeredAt, lastSyncAt: String

        init(prefix: String) {
            self.prefix = prefix
            appId = prefix + "app_id"
            userId = prefix + "user_id"
            id = prefix + "id"
            platform = prefix + "platform"
            platformAppId = prefix + "platform_app_id"
            transport = prefix + "transport"
            token = prefix + "token"
            environment = prefix + "environment"
            appDisplayName = prefix + "app_display_name"
            state = prefix + "state"
            inactiveReason = prefix + "inactive_reason"
            inactiveSince = prefix + "inactive_since"
            registeredAt = prefix + "registered_at"
            lastSyncAt = prefix + "last_sync_at"
        }

        static let plain = Names(prefix: "")
        static let joined = Names(prefix: "e_")
    }
}

extension Endpoint {
    /// Reads a row selected with ``EndpointColumns/list`` (or, with `names` = `.joined`, with
    /// ``EndpointColumns/joined``).
    init(row: PostgresRow, _ names: EndpointColumns.Names = .plain) throws {
        try self.init(row: row.makeRandomAccess(), names)
    }

    init(row: PostgresRandomAccessRow, _ names: EndpointColumns.Names = .plain) throws {
        self.init(
            id: try row.value(names.id),
            appId: try row.value(names.appId),
            userId: try row.value(names.userId),
            platform: Platform(rawValue: try row.value(names.platform)),
            platformAppId: try row.value(names.platformAppId),
            transport: TransportID(rawValue: try row.value(names.transport)),
            token: try row.value(names.token),
            attributes: Endpoint.attributes(column: try row.value(names.environment, as: String?.self)),
            appDisplayName: try row.value(names.appDisplayName),
            state: EndpointState(rawValue: try row.value(names.state)),
            inactiveReason: try row.value(names.inactiveReason),
            inactiveSince: try row.value(names.inactiveSince),
            registeredAt: try row.value(names.registeredAt),
            lastSyncAt: try row.value(names.lastSyncAt))
    }
}

// MARK: - Deliveries

enum DeliveryColumns {
    /// How a planned tap (`EXCLUDED`) merges into its endpoint's waiting tap `d`
    /// (``HubCore/OutboxMachine/tapMerge``): the `DO UPDATE SET` list of the taps' `ON CONFLICT`.
    static let tapMerge = mergeSQL(OutboxMachine.tapMerge, current: "d", incoming: "EXCLUDED")

    /// How a put-back tap (`incoming`) passes on to its endpoint's waiting tap `d`
    /// (``HubCore/OutboxMachine/supersedingMerge``).
    static let supersedingMerge = mergeSQL(OutboxMachine.supersedingMerge, current: "d", incoming: "incoming")

    /// How a parked row `d` is un-parked at `resumed.due_at` (``HubCore/OutboxMachine/resume``).
    static let resume = mergeSQL(OutboxMachine.resume, current: "d", incoming: "resumed")

    /// Which row is its endpoint's waiting tap (``HubCore/OutboxMachine/waitingTapSQL(_:)``),
    /// its columns unqualified: the predicate of the index `hub_delivery_pending_tap`, which the
    /// taps' `ON CONFLICT` names.
    static let waitingTap = OutboxMachine.waitingTapSQL(name)

    /// What `write` sets (``HubCore/OutboxMachine/setList(_:target:current:given:greatest:)``) as
    /// the `SET` list of an update of the row `d`, each given value as `given` names it. A write
    /// that finishes the row also sets its `purge_after` (``PostgresStore/purgeAfterSQL(_:finishedAt:)``:
    /// the partition of `hub_delivery_finished` it moves to).
    static func writeSQL(_ write: OutboxMachine.RowWrite, given: (OutboxMachine.Given) -> String) -> String {
        let set = OutboxMachine.setList(
            write, target: name, current: { "d.\(name($0))" }, given: given, greatest: "GREATEST")
        guard OutboxMachine.columns(write).contains(where: { $0.value == .finished }) else { return set }
        return set + ", purge_after = \(PostgresStore.purgeAfterSQL("d", finishedAt: given(.at)))"
    }

    /// `rules` (``HubCore/OutboxMachine/setList(_:target:current:incoming:greatest:least:)``) as
    /// the `SET` list of an update of the row `current` from the row `incoming` (table aliases).
    static func mergeSQL(
        _ rules: [(column: OutboxMachine.Column, rule: OutboxMachine.Rule)], current: String, incoming: String
    ) -> String {
        OutboxMachine.setList(
            rules, target: name, current: { "\(current).\(name($0))" }, incoming: { "\(incoming).\(name($0))" },
            greatest: "GREATEST", least: "LEAST")
    }

    /// The column of `column` in `hub_delivery`.
    static func name(_ column: OutboxMachine.Column) -> String {
        switch column {
        case .transport: "transport"
        case .notificationId: "notification_id"
        case .changeVersion: "change_version"
        case .priority: "priority"
        case .urgency: "urgency"
        case .dueAt: "due_at"
        case .suspendedAt: "suspended_at"
        case .suspendedReason: "suspended_reason"
        case .id: "id"
        case .state: "state"
        case .attempts: "attempts"
        case .leaseOwner: "lease_owner"
        case .leaseUntil: "lease_until"
        case .claimedAt: "claimed_at"
        case .finishedAt: "finished_at"
        case .kind: "kind"
        case .result: "result"
        case .detail: "detail"
        case .lastError: "last_error"
        case .firstSentAt: "first_sent_at"
        case .providerMessageId: "provider_message_id"
        }
    }

    static let list = """
        id, app_id, user_id, endpoint_id, kind, notification_id, change_version, priority, attempts, created_at,
        due_at, last_error
        """
}

extension Delivery {
    /// Reads a row selected with ``DeliveryColumns/list``.
    init(row: PostgresRow) throws {
        try self.init(row: row.makeRandomAccess())
    }

    init(row: PostgresRandomAccessRow) throws {
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
