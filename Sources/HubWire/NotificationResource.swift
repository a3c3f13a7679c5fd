public import struct Foundation.Date

// The JSON shapes of the hub's notification resources (openapi.yaml `Notification`, `FeedPage`):
// what HubServer writes and HubClient reads, so the two cannot drift apart. Package-internal: the
// public models are HubCore's `UserNotification` and HubClient's.

/// A notification as the hub sends it to publishers and devices.
package struct NotificationResource: Codable, Sendable, Hashable {
    package var id: String
    package var appNotificationId: String
    package var groupName: String?
    package var priority: NotificationPriority
    package var payload: NotificationPayload
    package var targetPolicy: TargetPolicy
    package var displayTimeToLive: Int?
    package var expirationDateTime: Date
    package var scheduledDateTime: Date?
    package var createdDateTime: Date
    package var lastModifiedDateTime: Date
    package var readState: ReadState
    package var userActionState: UserActionState
    package var status: NotificationStatus
    package var changeVersion: Int64

    package init(
        id: String, appNotificationId: String, groupName: String? = nil, priority: NotificationPriority,
        payload: NotificationPayload, targetPolicy: TargetPolicy = TargetPolicy(), displayTimeToLive: Int? = nil,
        expirationDateTime: Date, scheduledDateTime: Date? = nil, createdDateTime: Date, lastModifiedDateTime: Date,
        readState: ReadState, userActionState: UserActionState, status: NotificationStatus, changeVersion: Int64
    ) {
        self.id = id
        self.appNotificationId = appNotificationId
        self.groupName = groupName
        self.priority = priority
        self.payload = payload
        self.targetPolicy = targetPolicy
        self.displayTimeToLive = displayTimeToLive
        self.expirationDateTime = expirationDateTime
        self.scheduledDateTime = scheduledDateTime
        self.createdDateTime = createdDateTime
        self.lastModifiedDateTime = lastModifiedDateTime
        self.readState = readState
        self.userActionState = userActionState
        self.status = status
        self.changeVersion = changeVersion
    }
}

/// A list of notifications (history).
package struct NotificationList: Codable, Sendable {
    package var notifications: [NotificationResource]
    package init(notifications: [NotificationResource]) { self.notifications = notifications }
}

/// One page of a feed: the changes since a cursor.
package struct FeedPageResource: Codable, Sendable {
    package var changes: [NotificationResource]
    /// Pass it as `cursor` next time.
    package var cursor: String
    package var hasMore: Bool
    package init(changes: [NotificationResource], cursor: String, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}
