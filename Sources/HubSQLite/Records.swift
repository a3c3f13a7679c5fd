import Foundation
import GRDB
import HubCore
import Synchronization

// How HubCore values map to rows of the SQLite schema (see `SQLiteStore+Migrations.swift`).
//
// Conventions:
// - Times are REAL seconds since 1970 (`Date.timeIntervalSince1970`), never GRDB's default text
//   encoding, so that ranges (`dueAt <= ?`) compare numerically and sub-millisecond precision is kept.
// - Open enumerations (`ReadState`, `TransportID`, …) are stored as their raw strings.
// - `payload` and `targetPolicy` are JSON text; `fallbackPolicy` is its timeout in seconds, and
//   the whole policy as JSON in `fallbackDetails` when it names platforms or content (v5).

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
    static func encode(_ value: some Encodable) throws -> String { try encodeValue(value) }

    static func encodeValue(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from text: String) throws -> Value {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// The stored form of the default target policy (every platform), what almost every row holds.
    static let everyPlatform = #"{"platformTypes":[]}"#

    static func encode(_ policy: TargetPolicy) throws -> String {
        policy.platformTypes.isEmpty ? everyPlatform : try encodeValue(policy)
    }

    /// Payloads decoded lately, by their stored text: the devices of a user read the same new
    /// notification at about the same time (one wake-up, several long-polls), so most feed reads
    /// of a fresh notification find its payload here instead of decoding the JSON again.
    private static let recentPayloads = Mutex<[String: NotificationPayload]>([:])
    /// The most payloads kept; the cache starts over when full.
    static let recentPayloadLimit = 256

    static func decodePayload(_ text: String) throws -> NotificationPayload {
        if let cached = recentPayloads.withLock({ $0[text] }) { return cached }
        let payload = try decode(NotificationPayload.self, from: text)
        recentPayloads.withLock { cache in
            if cache.count >= recentPayloadLimit { cache.removeAll(keepingCapacity: true) }
            cache[text] = payload
        }
        return payload
    }

    static func decodePolicy(_ text: String) throws -> TargetPolicy {
        text == everyPlatform ? TargetPolicy() : try decode(TargetPolicy.self, from: text)
    }
}

// MARK: - Priorities

extension NotificationPriority {
    /// Claim order of a delivery (``OutboxMachine/urgency(_:)``).
    var urgency: Int { OutboxMachine.urgency(self) }

    /// The more urgent of two priorities (``OutboxMachine/higher(_:_:)``).
    func higher(_ other: NotificationPriority) -> NotificationPriority { OutboxMachine.higher(self, other) }
}

// MARK: - Notifications

/// A row of the `notification` table.
struct NotificationRecord: FetchableRecord {
    static let databaseTableName = "notification"
    var notification: UserNotification

    /// The columns every notification query selects, in the order ``init(row:)`` reads them
    /// (by position: a lookup by name lowercases the name on every access).
    static let selection = """
        appId, userId, id, appNotificationId, groupName, priority, payload, targetPolicy, displayTimeToLive, \
        expirationDateTime, fallbackTimeoutSeconds, deliveryMode, createdDateTime, lastModifiedDateTime, readState, \
        userActionState, status, changeVersion, fallbackDetails, scheduledDateTime
        """

    // The queries of every publish and feed read, built once: `cachedStatement(sql:)` hashes its
    // text on every call, and an interpolated text was also built on every call.

    /// A feed's changes after a version (`appId`, `userId`, `changeVersion`, limit).
    static let feedQuery = """
        SELECT \(selection) FROM notification WHERE appId = ? AND userId = ? AND changeVersion > ?
        ORDER BY changeVersion LIMIT ?
        """
    /// One notification by hub ID (`appId`, `userId`, `id`).
    static let byIdQuery = "SELECT \(selection) FROM notification WHERE appId = ? AND userId = ? AND id = ?"
    /// One notification by the publisher's ID (`appId`, `userId`, `appNotificationId`).
    static let byAppNotificationIdQuery =
        "SELECT \(selection) FROM notification WHERE appId = ? AND userId = ? AND appNotificationId = ?"
    /// The notifications of many `[userId, appNotificationId]` pairs (`appId`, the pairs as a JSON
    /// array), each found by the same index as ``byAppNotificationIdQuery``.
    static let byAppNotificationIdsQuery = """
        SELECT \(selection) FROM notification WHERE appId = ? AND (userId, appNotificationId) IN (
            SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
        """

    /// Reads a row selected with ``selection``.
    init(row: Row) throws {
        let fallbackSeconds: Int? = row[10]
        notification = UserNotification(
            id: row[2],
            appId: row[0],
            userId: row[1],
            appNotificationId: row[3],
            groupName: row[4],
            priority: NotificationPriority(rawValue: row[5]),
            payload: try JSONColumn.decodePayload(row[6]),
            targetPolicy: try JSONColumn.decodePolicy(row[7]),
            displayTimeToLive: row[8],
            expirationDateTime: Date(storedSeconds: row[9]),
            fallbackPolicy: try (row[18] as String?).map { try JSONColumn.decode(FallbackPolicy.self, from: $0) }
                ?? fallbackSeconds.map { FallbackPolicy(timeoutSeconds: $0) },
            deliveryMode: (row[11] as String?).map(DeliveryMode.init(rawValue:)),
            createdDateTime: Date(storedSeconds: row[12]),
            lastModifiedDateTime: Date(storedSeconds: row[13]),
            readState: ReadState(rawValue: row[14]),
            userActionState: UserActionState(rawValue: row[15]),
            status: NotificationStatus(rawValue: row[16]),
            changeVersion: row[17],
            scheduledDateTime: (row[19] as Double?).map(Date.init(storedSeconds:))
        )
    }

    /// The JSON columns of a notification, encoded before its write transaction so that the
    /// encoding runs beside the database writer rather than on it.
    struct EncodedContent: Sendable {
        var payload: String
        var targetPolicy: String
        /// The fallback policy's JSON when it holds more than its timeout.
        var fallbackDetails: String?

        init(payload: NotificationPayload, targetPolicy: TargetPolicy, fallbackPolicy: FallbackPolicy?) throws {
            self.payload = payload.storedJSON
            self.targetPolicy = try JSONColumn.encode(targetPolicy)
            self.fallbackDetails = try fallbackPolicy.flatMap { $0.hasDetails ? try JSONColumn.encode($0) : nil }
        }

        init(_ notification: UserNotification) throws {
            try self.init(
                payload: notification.payload, targetPolicy: notification.targetPolicy,
                fallbackPolicy: notification.fallbackPolicy)
        }
    }

    /// The columns other than the key, in the order of ``insert(_:content:_:)``'s and
    /// ``update(_:content:_:)``'s arguments.
    private static let contentColumns = [
        "appNotificationId", "groupName", "priority", "payload", "targetPolicy", "displayTimeToLive",
        "expirationDateTime", "fallbackTimeoutSeconds", "deliveryMode", "createdDateTime", "lastModifiedDateTime",
        "readState", "userActionState", "status", "changeVersion", "fallbackDetails", "scheduledDateTime",
    ]
    private static let insertSQL =
        "INSERT INTO notification (\(contentColumns.joined(separator: ", ")), appId, userId, id) VALUES ("
        + Array(repeating: "?", count: contentColumns.count + 3).joined(separator: ", ") + ")"
    /// A publish (or a release) resets `publishedVersion` (`NULL`: the row's `changeVersion`); any
    /// other change keeps the version of the latest publish there before `changeVersion` moves
    /// (the right-hand sides of an `UPDATE` read the row as it was).
    private static func updateSQL(published: Bool) -> String {
        "UPDATE notification SET \(contentColumns.map { "\($0) = ?" }.joined(separator: ", ")), "
            + (published ? "publishedVersion = NULL " : "publishedVersion = COALESCE(publishedVersion, changeVersion) ")
            + "WHERE appId = ? AND userId = ? AND id = ?"
    }
    private static let publishUpdateSQL = updateSQL(published: true)
    private static let changeUpdateSQL = updateSQL(published: false)

    /// Content columns, then the key: what both statements take.
    private static func arguments(_ n: UserNotification, _ content: EncodedContent) -> StatementArguments {
        let values: [(any DatabaseValueConvertible)?] = [
            n.appNotificationId, n.groupName, n.priority.rawValue, content.payload, content.targetPolicy,
            n.displayTimeToLive, n.expirationDateTime.storedSeconds, n.fallbackPolicy?.timeoutSeconds,
            n.deliveryMode?.rawValue, n.createdDateTime.storedSeconds, n.lastModifiedDateTime.storedSeconds,
            n.readState.rawValue, n.userActionState.rawValue, n.status.rawValue, n.changeVersion,
            content.fallbackDetails, n.scheduledDateTime?.storedSeconds, n.appId, n.userId, n.id,
        ]
        return StatementArguments(values)
    }

    /// Inserts a row with a cached statement (GRDB's record insert builds its statement and
    /// arguments through key paths on every call, which showed in the publish profile).
    /// `content` must be the notification's own payload and target policy, encoded.
    static func insert(_ notification: UserNotification, content: EncodedContent, _ db: Database) throws {
        try db.cachedStatement(sql: insertSQL).execute(arguments: arguments(notification, content))
    }

    /// Rewrites the row of `notification` (found by app, user and hub ID); `published`: the change is a
    /// publish or a scheduled release (see ``updateSQL(published:)``).
    /// - Throws: `RecordError.recordNotFound` when there is no such row.
    static func update(
        _ notification: UserNotification, content: EncodedContent, _ db: Database, published: Bool
    ) throws {
        try db.cachedStatement(sql: published ? publishUpdateSQL : changeUpdateSQL).execute(
            arguments: arguments(notification, content))
        guard db.changesCount > 0 else {
            throw RecordError.recordNotFound(
                databaseTableName: databaseTableName,
                key: [
                    "appId": notification.appId.databaseValue, "userId": notification.userId.databaseValue,
                    "id": notification.id.databaseValue,
                ])
        }
    }

    /// Rewrites the row of `notification`, encoding its content here.
    static func update(_ notification: UserNotification, _ db: Database, published: Bool = false) throws {
        try update(notification, content: try EncodedContent(notification), db, published: published)
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
            attributes: Endpoint.attributes(column: row["environment"]),
            appDisplayName: row["appDisplayName"],
            state: EndpointState(rawValue: row["state"]),
            inactiveReason: row["inactiveReason"],
            inactiveSince: row.optionalDate("inactiveSince"),
            registeredAt: row.date("registeredAt"),
            lastSyncAt: row.optionalDate("lastSyncAt")
        )
    }

    /// The columns ``init(positional:)`` reads, in its order.
    static let positionalColumns = """
        id, appId, userId, platform, platformAppId, transport, token, environment, appDisplayName, state, \
        inactiveReason, inactiveSince, registeredAt, lastSyncAt
        """

    /// A user's active endpoints (`appId`, `userId`), read by every publish.
    static let activeQuery = """
        SELECT \(positionalColumns) FROM endpoint
        WHERE appId = ? AND userId = ? AND state = 'active' ORDER BY id
        """
    /// ``activeQuery`` for many users (`appId`, the user IDs as a JSON array): by user, then ID.
    static let activeOfUsersQuery = """
        SELECT \(positionalColumns) FROM endpoint
        WHERE appId = ? AND state = 'active' AND userId IN (SELECT value FROM json_each(?)) ORDER BY userId, id
        """

    /// A row of ``positionalColumns``, read by position (a publish reads every endpoint of its
    /// user; looking each column up by name was most of that read's cost).
    init(positional row: Row) {
        endpoint = Endpoint(
            id: row[0],
            appId: row[1],
            userId: row[2],
            platform: Platform(rawValue: row[3]),
            platformAppId: row[4],
            transport: TransportID(rawValue: row[5]),
            token: row[6],
            attributes: Endpoint.attributes(column: row[7]),
            appDisplayName: row[8],
            state: EndpointState(rawValue: row[9]),
            inactiveReason: row[10],
            inactiveSince: (row[11] as Double?).map(Date.init(storedSeconds:)),
            registeredAt: Date(storedSeconds: row[12]),
            lastSyncAt: (row[13] as Double?).map(Date.init(storedSeconds:))
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
        container["environment"] = e.attributesColumn
        container["appDisplayName"] = e.appDisplayName
        container["state"] = e.state.rawValue
        container["inactiveReason"] = e.inactiveReason
        container["inactiveSince"] = e.inactiveSince?.storedSeconds
        container["registeredAt"] = e.registeredAt.storedSeconds
        container["lastSyncAt"] = e.lastSyncAt?.storedSeconds
    }
}
