public import Foundation
public import HubCore
import PostgresNIO

// The console's reads across an app (``ConsoleQueries``), each paged by a position that is a
// range bound of an index (schema version 9), never an offset. Each statement is one text whose
// optional conditions are `$n IS NULL OR …`: PostgresNIO sends it unnamed, so it is planned with
// its parameters' values and the conditions without a value fold away.
extension PostgresStore: ConsoleQueries {
    /// Version 9: what the console reads. `hub_notification_console` lists an app's notifications
    /// newest first and bounds a time range; `hub_delivery_failed` holds only the failed finished
    /// deliveries, by app and finish time; `hub_endpoint_console` lists an app's endpoints of one
    /// state by user and ID in byte order (a user prefix is a range of it).
    static let schemaV9 = [
        """
        CREATE INDEX hub_notification_console
            ON hub_notification (app_id, created_date_time DESC, id COLLATE "C" DESC)
        """,
        """
        CREATE INDEX hub_delivery_failed ON hub_delivery (app_id, finished_at)
            WHERE state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp')
        """,
        """
        CREATE INDEX hub_endpoint_console ON hub_endpoint (app_id, state, user_id COLLATE "C", id COLLATE "C")
        """,
    ]

    /// ``consoleNotifications(appId:filter:after:limit:)``: `$1` app, `$2` user, `$3`
    /// appNotificationId, `$4` status, `$5` from, `$6` to, `$7`/`$8` the position, `$9` limit.
    static let consoleNotificationsSQL = """
        SELECT \(NotificationColumns.list) FROM hub_notification
        WHERE app_id = $1
            AND ($2::text IS NULL OR user_id = $2::text)
            AND ($3::text IS NULL OR app_notification_id = $3::text)
            AND ($4::text IS NULL OR status = $4::text)
            AND ($5::timestamptz IS NULL OR created_date_time >= $5::timestamptz)
            AND ($6::timestamptz IS NULL OR created_date_time < $6::timestamptz)
            AND ($7::timestamptz IS NULL
                OR (created_date_time, id COLLATE "C") < ($7::timestamptz, $8::text COLLATE "C"))
        ORDER BY created_date_time DESC, id COLLATE "C" DESC
        LIMIT $9
        """

    static func consoleNotificationsBindings(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 9)
        binds.append(appId)
        binds.append(filter.userId)
        binds.append(filter.appNotificationId)
        binds.append(filter.status?.rawValue)
        binds.append(filter.from)
        binds.append(filter.to)
        binds.append(after?.createdDateTime)
        binds.append(after?.id)
        binds.append(Int64(max(0, limit)))
        return binds
    }

    public func consoleNotifications(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) async throws -> [UserNotification] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let binds = Self.consoleNotificationsBindings(appId: appId, filter: filter, after: after, limit: limit)
        return try await rows(PostgresQuery(unsafeSQL: Self.consoleNotificationsSQL, binds: binds))
            .map { try UserNotification(row: $0) }
    }

    /// The failed deliveries of an app in a range: `$1` app, `$2` from, `$3` to.
    static let consoleFailuresSource = """
        SELECT user_id, endpoint_id, notification_id, transport, kind, result AS outcome, detail AS reason,
            finished_at AS at
        FROM hub_delivery
        WHERE app_id = $1 AND state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp')
            AND finished_at >= $2 AND finished_at < $3
        UNION ALL
        SELECT user_id, endpoint_id, notification_id, transport, kind, 'suspended' AS outcome,
            suspended_reason AS reason, suspended_at AS at
        FROM hub_delivery
        WHERE app_id = $1 AND state = 'pending' AND suspended_at IS NOT NULL
            AND suspended_at >= $2 AND suspended_at < $3
        """

    /// ``consoleFailures(appId:from:to:limit:)``; `$4` the limit.
    static let consoleFailuresSQL = "SELECT * FROM (\(consoleFailuresSource)) AS failed ORDER BY at DESC LIMIT $4"

    static let consoleFailureGroupsSQL = """
        SELECT transport, outcome, reason, count(*) AS count, max(at) AS latest
        FROM (\(consoleFailuresSource)) AS failed
        GROUP BY transport, outcome, reason
        ORDER BY count DESC, transport COLLATE "C", outcome COLLATE "C", reason COLLATE "C"
        """

    private static func rangeBindings(appId: String, from: Date, to: Date, capacity: Int = 3) -> PostgresBindings {
        var binds = PostgresBindings(capacity: capacity)
        binds.append(appId)
        binds.append(from)
        binds.append(to)
        return binds
    }

    public func consoleFailures(appId: String, from: Date, to: Date, limit: Int) async throws -> [ConsoleFailure] {
        try Identifier.checkBeforeStoring(["appId": appId])
        var binds = Self.rangeBindings(appId: appId, from: from, to: to, capacity: 4)
        binds.append(Int64(max(0, limit)))
        return try await rows(PostgresQuery(unsafeSQL: Self.consoleFailuresSQL, binds: binds)).map { row in
            let (user, endpoint, notification, transport, kind, outcome, reason, at) = try row.decode(
                (String, String, String?, String, String, String, String?, Date).self)
            return ConsoleFailure(
                userId: user, endpointId: endpoint, notificationId: notification, transport: TransportID(transport),
                kind: DeliveryKind(rawValue: kind), outcome: Self.outcome(outcome), reason: reason, at: at)
        }
    }

    public func consoleFailureGroups(appId: String, from: Date, to: Date) async throws -> [ConsoleFailureGroup] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let binds = Self.rangeBindings(appId: appId, from: from, to: to)
        return try await rows(PostgresQuery(unsafeSQL: Self.consoleFailureGroupsSQL, binds: binds)).map { row in
            let (transport, outcome, reason, count, latest) = try row.decode(
                (String, String, String?, Int64, Date).self)
            return ConsoleFailureGroup(
                transport: TransportID(transport), outcome: Self.outcome(outcome), reason: reason, count: Int(count),
                latest: latest)
        }
    }

    /// A stored result, or `suspended`, as the console names it.
    private static func outcome(_ stored: String) -> ConsoleFailureOutcome {
        ConsoleFailureOutcome(DeliveryResult(rawValue: stored)) ?? ConsoleFailureOutcome(rawValue: stored)
    }

    /// ``consoleEndpoints(appId:state:userPrefix:endpointPrefix:after:limit:)``: `$1` app, `$2`
    /// state, `$3`/`$4` the user prefix's range, `$5` the endpoint prefix, `$6`/`$7` the
    /// position, `$8` limit.
    static let consoleEndpointsSQL = """
        SELECT \(EndpointColumns.list) FROM hub_endpoint
        WHERE app_id = $1 AND state = $2
            AND ($3::text IS NULL OR (user_id COLLATE "C" >= $3::text AND user_id COLLATE "C" < $4::text))
            AND ($5::text IS NULL OR starts_with(id, $5::text))
            AND ($6::text IS NULL OR (user_id COLLATE "C", id COLLATE "C") > ($6::text, $7::text))
        ORDER BY user_id COLLATE "C", id COLLATE "C"
        LIMIT $8
        """

    static func consoleEndpointsBindings(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 8)
        binds.append(appId)
        binds.append(state.rawValue)
        binds.append(userPrefix.isEmpty ? nil : userPrefix)
        binds.append(userPrefix.isEmpty ? nil : userPrefix + "\u{10FFFF}")
        binds.append(endpointPrefix.isEmpty ? nil : endpointPrefix)
        binds.append(after?.userId)
        binds.append(after?.endpointId)
        binds.append(Int64(max(0, limit)))
        return binds
    }

    public func consoleEndpoints(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let binds = Self.consoleEndpointsBindings(
            appId: appId, state: state, userPrefix: userPrefix, endpointPrefix: endpointPrefix, after: after,
            limit: limit)
        return try await rows(PostgresQuery(unsafeSQL: Self.consoleEndpointsSQL, binds: binds))
            .map { try Endpoint(row: $0) }
    }
}
