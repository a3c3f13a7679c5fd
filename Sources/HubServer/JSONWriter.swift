import Foundation
import HubCore
import HubWire

// The hot resources (a notification, a feed page, a history) are written straight to bytes:
// Foundation's JSONEncoder with a custom date strategy was ~4% of a publish's CPU. The output is
// what `JSON.encoder()` would make: keys sorted, `nil` left out, `/` unescaped, times as
// `2025-01-31T12:00:00.000Z` (tests compare it with the types' synthesized Encodable conformance).

/// A resource that writes its own JSON, the same as its synthesized `Encodable` conformance would
/// through `JSON.encoder()` (tests compare the two; `JSON.response` and `JSON.data` pick the writer).
protocol JSONWritable: Encodable, Sendable {
    func write(to json: inout JSONWriter)
}

// MARK: The hot resources

extension NotificationResource: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("appNotificationId", appNotificationId)
            json.member("changeVersion", changeVersion)
            json.member("createdDateTime", createdDateTime)
            json.member("displayTimeToLive", displayTimeToLive)
            json.member("expirationDateTime", expirationDateTime)
            json.member("groupName", groupName)
            json.member("id", id)
            json.member("lastModifiedDateTime", lastModifiedDateTime)
            json.key("payload")
            payload.write(to: &json)
            json.member("priority", priority.rawValue)
            json.member("readState", readState.rawValue)
            json.member("scheduledDateTime", scheduledDateTime)
            json.member("status", status.rawValue)
            json.key("targetPolicy")
            json.object { json in
                json.key("platformTypes")
                json.array(targetPolicy.platformTypes) { json, platform in json.string(platform.rawValue) }
            }
            json.member("userActionState", userActionState.rawValue)
        }
    }
}

extension NotificationList: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.key("notifications")
            json.array(notifications) { json, notification in notification.write(to: &json) }
        }
    }
}

extension FeedPageResource: JSONWritable {
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.key("changes")
            json.array(changes) { json, change in change.write(to: &json) }
            json.member("cursor", cursor)
            json.key("hasMore")
            json.bool(hasMore)
        }
    }
}
