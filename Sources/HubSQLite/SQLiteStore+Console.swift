public import Foundation
import GRDB
public import HubCore

// The console's reads across an app (``ConsoleQueries``), each paged by a position that is a
// range bound of an index (migration `v10`), never an offset.
extension SQLiteStore: ConsoleQueries {
    /// `v10`: what the console reads. `notification_console` (app, creation time, ID) lists an
    /// app's notifications newest first and bounds a time range; `delivery_failed` holds only the
    /// failed finished deliveries, by app and finish time.
    static func addConsoleIndexes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX notification_console ON notification (appId, createdDateTime, id);
                CREATE INDEX delivery_failed ON delivery (appId, finishedAt)
                    WHERE state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp');
                """)
    }

    /// The statement of ``consoleNotifications(appId:filter:after:limit:)``: only the conditions
    /// the filter has, so each one bounds the index walk or filters it, never `? IS NULL OR …`.
    static func consoleNotificationsQuery(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) -> (sql: String, arguments: StatementArguments) {
        var sql = "SELECT \(NotificationRecord.selection) FROM notification WHERE appId = ?"
        var arguments: StatementArguments = [appId]
        if let user = filter.userId {
            sql += " AND userId = ?"
            arguments += [user]
        }
        if let appNotificationId = filter.appNotificationId {
            sql += " AND appNotificationId = ?"
            arguments += [appNotificationId]
        }
        if let status = filter.status {
            sql += " AND status = ?"
            arguments += [status.rawValue]
        }
        if let from = filter.from {
            sql += " AND createdDateTime >= ?"
            arguments += [from.storedSeconds]
        }
        if let to = filter.to {
            sql += " AND createdDateTime < ?"
            arguments += [to.storedSeconds]
        }
        if let after {
            sql += " AND (createdDateTime, id) < (?, ?)"
            arguments += [after.createdDateTime.storedSeconds, after.id]
        }
        sql += " ORDER BY createdDateTime DESC, id DESC LIMIT ?"
        arguments += [max(0, limit)]
        return (sql, arguments)
    }

    public func consoleNotifications(
        appId: String, filter: ConsoleNotificationFilter, after: ConsoleNotificationPosition?, limit: Int
    ) async throws -> [UserNotification] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let query = Self.consoleNotificationsQuery(appId: appId, filter: filter, after: after, limit: limit)
        return try await read { db in
            try NotificationRecord.fetchAll(db.cachedStatement(sql: query.sql), arguments: query.arguments)
                .map { Self.canonical($0.notification) }
        }
    }

    /// The failed deliveries of an app in a range (`appId`, from, to, `appId`, from, to): finished
    /// ones through `delivery_failed`, suspended ones through `delivery_suspended`.
    static let consoleFailuresSource = """
        SELECT userId, endpointId, notificationId, transport, kind, result AS outcome, detail AS reason,
            finishedAt AS at
        FROM delivery
        WHERE appId = ? AND state = 'finished' AND result IN ('endpointGone', 'rejected', 'gaveUp')
            AND finishedAt >= ? AND finishedAt < ?
        UNION ALL
        SELECT userId, endpointId, notificationId, transport, kind, 'suspended' AS outcome,
            suspendedReason AS reason, suspendedAt AS at
        FROM delivery
        WHERE appId = ? AND state = 'pending' AND suspendedAt IS NOT NULL AND suspendedAt >= ? AND suspendedAt < ?
        """

    static let consoleFailuresSQL = "SELECT * FROM (\(consoleFailuresSource)) ORDER BY at DESC LIMIT ?"

    static let consoleFailureGroupsSQL = """
        SELECT transport, outcome, reason, COUNT(*) AS count, MAX(at) AS latest FROM (\(consoleFailuresSource))
        GROUP BY transport, outcome, reason ORDER BY count DESC, transport, outcome, reason
        """

    public func consoleFailures(appId: String, from: Date, to: Date, limit: Int) async throws -> [ConsoleFailure] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let range: StatementArguments = [appId, from.storedSeconds, to.storedSeconds]
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: Self.consoleFailuresSQL), arguments: range + range + [max(0, limit)]
            ).map { row in
                ConsoleFailure(
                    userId: row["userId"], endpointId: row["endpointId"], notificationId: row["notificationId"],
                    transport: TransportID(rawValue: row["transport"]), kind: DeliveryKind(rawValue: row["kind"]),
                    outcome: Self.outcome(row["outcome"]), reason: row["reason"],
                    at: Date(storedSeconds: row["at"]))
            }
        }
    }

    public func consoleFailureGroups(appId: String, from: Date, to: Date) async throws -> [ConsoleFailureGroup] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let range: StatementArguments = [appId, from.storedSeconds, to.storedSeconds]
        return try await read { db in
            try Row.fetchAll(db.cachedStatement(sql: Self.consoleFailureGroupsSQL), arguments: range + range).map {
                row in
                ConsoleFailureGroup(
                    transport: TransportID(rawValue: row["transport"]), outcome: Self.outcome(row["outcome"]),
                    reason: row["reason"], count: row["count"], latest: Date(storedSeconds: row["latest"]))
            }
        }
    }

    /// A stored result, or `suspended`, as the console names it.
    private static func outcome(_ stored: String) -> ConsoleFailureOutcome {
        ConsoleFailureOutcome(DeliveryResult(rawValue: stored)) ?? ConsoleFailureOutcome(rawValue: stored)
    }

    /// The statement of ``consoleEndpoints(appId:state:userPrefix:endpointPrefix:after:limit:)``
    /// (`appId`, `state`, then the arguments of the conditions it has, then the limit); a user
    /// prefix is a range of `endpoint_state`.
    static func consoleEndpointsQuery(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) -> (sql: String, arguments: StatementArguments) {
        var sql = "SELECT * FROM endpoint WHERE appId = ? AND state = ?"
        var arguments: StatementArguments = [appId, state.rawValue]
        if !userPrefix.isEmpty {
            sql += " AND userId >= ? AND userId < ?"
            arguments += [userPrefix, userPrefix + "\u{10FFFF}"]
        }
        if !endpointPrefix.isEmpty {
            sql += " AND substr(id, 1, length(?)) = ?"
            arguments += [endpointPrefix, endpointPrefix]
        }
        if let after {
            sql += " AND (userId, id) > (?, ?)"
            arguments += [after.userId, after.endpointId]
        }
        sql += " ORDER BY userId, id LIMIT ?"
        arguments += [max(0, limit)]
        return (sql, arguments)
    }

    public func consoleEndpoints(
        appId: String, state: EndpointState, userPrefix: String, endpointPrefix: String, after: EndpointPosition?,
        limit: Int
    ) async throws -> [Endpoint] {
        try Identifier.checkBeforeStoring(["appId": appId])
        let query = Self.consoleEndpointsQuery(
            appId: appId, state: state, userPrefix: userPrefix, endpointPrefix: endpointPrefix, after: after,
            limit: limit)
        return try await read { db in
            try EndpointRecord.fetchAll(db.cachedStatement(sql: query.sql), arguments: query.arguments)
                .map { Self.canonical($0.endpoint) }
        }
    }
}
