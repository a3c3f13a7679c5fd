import Foundation
import HubCore
import HubWire
import Hummingbird
import NIOCore

// The JSON shapes of the API (DESIGN §4): camelCase keys, ISO 8601 UTC times with fractional
// seconds, `nil` fields left out. Push tokens and secrets never appear in any of them.

// NotificationResource, NotificationList and FeedPageResource are HubWire's: the same types
// HubClient decodes.

extension NotificationResource {
    /// A user notification as publishers and devices see it.
    init(_ notification: UserNotification) {
        self.init(
            id: notification.id, appNotificationId: notification.appNotificationId,
            groupName: notification.groupName, priority: notification.priority, payload: notification.payload,
            targetPolicy: notification.targetPolicy, displayTimeToLive: notification.displayTimeToLive,
            expirationDateTime: notification.expirationDateTime, scheduledDateTime: notification.scheduledDateTime,
            createdDateTime: notification.createdDateTime, lastModifiedDateTime: notification.lastModifiedDateTime,
            readState: notification.readState, userActionState: notification.userActionState,
            status: notification.status, changeVersion: notification.changeVersion)
    }
}

/// One app install on one device. `userId` is filled in for admins only; the push token is
/// never included.
struct EndpointResource: Encodable, Sendable {
    var id: String
    var userId: String?
    var platform: String
    var appId: String
    var transport: String
    var environment: String?
    /// Web Push: what the device said at registration (`declarative`), when it said it.
    var declarative: Bool?
    var appDisplayName: String?
    var state: String
    var inactiveReason: String?
    var inactiveSince: Date?
    var registeredDateTime: Date
    var lastSyncDateTime: Date?

    init(_ endpoint: Endpoint, includeUser: Bool = false) {
        id = endpoint.id
        userId = includeUser ? endpoint.userId : nil
        platform = endpoint.platform.rawValue
        appId = endpoint.platformAppId
        transport = endpoint.transport.rawValue
        environment = endpoint.attributes["environment"]
        declarative = endpoint.attributes["declarative"].map { $0 == "true" }
        appDisplayName = endpoint.appDisplayName
        state = endpoint.state.rawValue
        inactiveReason = endpoint.inactiveReason
        inactiveSince = endpoint.inactiveSince
        registeredDateTime = endpoint.registeredAt
        lastSyncDateTime = endpoint.lastSyncAt
    }
}

struct EndpointList: Encodable, Sendable {
    var endpoints: [EndpointResource]
    /// The cursor of the next page (its `after`), absent on the last page.
    var nextAfter: String?
    /// The path and query of the next page, absent on the last page.
    var next: String?
}

/// A Graph subscription ID (`X-UNS-ID`) for the calling user.
struct SubscriptionResource: Encodable, Sendable {
    var id: String
    var expirationDateTime: Date
}

/// The app's VAPID public key, for `pushManager.subscribe({applicationServerKey})`.
struct WebPushKeyResource: Encodable, Sendable {
    var applicationServerKey: String
}

/// What an admin sees of a configured app: IDs, names and kinds, never a secret.
struct AppResource: Encodable, Sendable {
    struct PlatformIDs: Encodable, Sendable {
        var platform: String
        var appIds: [String]
    }
    struct Identity: Encodable, Sendable {
        var issuer: String
        var audiences: [String]
        /// `jwksFile`, `jwksURL` or `secret`.
        var keys: String
        var userClaim: String
    }
    /// Per transport with credentials, what kind they are (``TransportCredentials/summary``).
    typealias Credentials = [String: String]
    struct Domain: Encodable, Sendable {
        var verified: Bool
        var verifiedDateTime: Date?
    }

    var id: String
    var name: String
    var platforms: [PlatformIDs]
    var identity: [Identity]
    var credentials: Credentials
    var publishers: [String]
    var deliveryMode: String
    /// What the app icon's badge shows (`unread`), absent when the hub sends no badge of its own.
    var badge: String?
    var domain: Domain?

    init(_ app: CrossDeviceApp) {
        id = app.id
        name = app.name
        platforms = app.supportedPlatforms.map { PlatformIDs(platform: $0.rawValue, appIds: app.platforms[$0] ?? []) }
        identity = app.identity.map { registration in
            let keys =
                switch registration.keys {
                case .jwksFile: "jwksFile"
                case .jwksURL: "jwksURL"
                case .secret: "secret"
                }
            return Identity(
                issuer: registration.issuer, audiences: registration.audiences, keys: keys,
                userClaim: registration.userClaim)
        }
        credentials = Dictionary(
            uniqueKeysWithValues: app.credentials.transports.compactMap { id in
                app.credentials[transport: id].map { (id.rawValue, $0.summary) }
            })
        publishers = app.publishers.map(\.name)
        deliveryMode = app.delivery.mode.rawValue
        badge = app.delivery.badge?.rawValue
        domain = app.domain.map { Domain(verified: $0.verifiedAt != nil, verifiedDateTime: $0.verifiedAt) }
    }
}

struct AppList: Encodable, Sendable {
    var apps: [AppResource]
}

/// Outbox counts.
struct StatisticsResource: Encodable, Sendable {
    var appId: String
    /// `hub`: the counts cover every app of the hub (the store does not break them down per app).
    var scope: String
    var pending: Int
    var finished: [String: [String: Int]]
    /// This app's parked deliveries (always per app), by transport.
    var suspended: [SuspendedResource]
}

/// Deliveries of one app and transport parked for a configuration fault until the hub restarts.
struct SuspendedResource: Encodable, Sendable {
    var transport: String
    var count: Int
    var lastReason: String?
    var lastSuspendedDateTime: Date?

    init(_ suspended: SuspendedDeliveries) {
        transport = suspended.transport.rawValue
        count = suspended.count
        lastReason = suspended.lastReason
        lastSuspendedDateTime = suspended.lastSuspendedAt
    }
}

struct StatusResource: Encodable, Sendable {
    var status: String
}

// MARK: Encoding

/// The API's JSON conventions are HubWire's ``WireJSON`` (HubClient reads with the same).
enum JSON {
    /// Output times: `2025-01-31T12:00:00.000Z`.
    static var dateStyle: Date.ISO8601FormatStyle { WireJSON.dateStyle }

    static func encoder() -> JSONEncoder { WireJSON.encoder() }

    /// Parses an ISO 8601 date-time, with or without fractional seconds, `Z` or an offset.
    static func date(_ text: String) -> Date? { WireJSON.date(text) }

    static func data(_ value: some Encodable) throws -> Data {
        try encoder().encode(value)
    }

    static func data(_ value: some JSONWritable) -> Data {
        Data(bytes(value))
    }

    /// The JSON of a resource that writes itself.
    static func bytes(_ value: some JSONWritable) -> [UInt8] {
        var writer = JSONWriter()
        value.write(to: &writer)
        return writer.bytes
    }

    /// A JSON response.
    static func response(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data = try data(value)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A JSON response of a resource that writes itself (see ``JSONWritable``).
    static func response(
        _ value: some JSONWritable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(
            status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes(value))))
    }
}
