import Foundation
import HubCore

/// A notification in Microsoft Graph's response shape (the beta `notification` resource), which
/// `POST /beta/me/notifications` answers with so that code written for Graph reads what it read
/// there: `@odata.context`, `id`, the publish's own fields (`targetHostName` is the app,
/// `priority` in Graph's casing, the fallback policy as `endpointFallback`), and none of the hub's
/// server-kept state (the `/v1` routes serve that).
struct GraphNotificationResource: Encodable, Sendable {
    struct Fallback: Encodable, Sendable {
        struct Endpoint: Encodable, Sendable {
            var platformTypes: [String]
            var fallbackDelayInSeconds: Int
            var visualContent: VisualContent?
        }
        var endpointFallback: Endpoint
    }

    var context: String
    var id: String
    var appNotificationId: String
    var targetHostName: String
    var groupName: String?
    var priority: String
    var payload: NotificationPayload
    var targetPolicy: TargetPolicy
    var displayTimeToLive: Int?
    var expirationDateTime: Date
    var fallbackPolicy: Fallback?

    enum CodingKeys: String, CodingKey {
        case context = "@odata.context"
        case id, appNotificationId, targetHostName, groupName, priority, payload, targetPolicy, displayTimeToLive
        case expirationDateTime, fallbackPolicy
    }

    init(_ notification: UserNotification) {
        // OData quotes a key in single quotes, doubling any inside it.
        let user = notification.userId.replacingOccurrences(of: "'", with: "''")
        context = "/beta/$metadata#users('\(user)')/notifications/$entity"
        id = notification.id
        appNotificationId = notification.appNotificationId
        targetHostName = notification.appId
        groupName = notification.groupName
        priority = Self.graphCasing(notification.priority)
        payload = notification.payload
        targetPolicy = notification.targetPolicy
        displayTimeToLive = notification.displayTimeToLive
        expirationDateTime = notification.expirationDateTime
        fallbackPolicy = notification.fallbackPolicy.map { policy in
            Fallback(
                endpointFallback: Fallback.Endpoint(
                    platformTypes: policy.platformTypes.map(\.rawValue),
                    fallbackDelayInSeconds: policy.timeoutSeconds, visualContent: policy.visualContent))
        }
    }

    /// `None`, `Low`, `High`: the values Graph documents.
    static func graphCasing(_ priority: NotificationPriority) -> String {
        let raw = priority.rawValue
        return raw.prefix(1).uppercased() + raw.dropFirst()
    }
}
