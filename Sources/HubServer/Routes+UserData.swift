import Foundation
import HubCore
import Hummingbird

extension HubAPI {
    /// A person's data, on the app operator's request (publisher key of the app, or the admin
    /// token); both are audited in the log (who, when, counts), never with the content:
    ///
    /// - `GET /v1/apps/{app}/users/{userId}/export`: everything the hub holds about the user as
    ///   one JSON document (``UserExportResource``); push tokens masked to their last 6 characters.
    /// - `DELETE /v1/apps/{app}/users/{userId}`: taps the user's devices, then erases every row
    ///   that names the user in one transaction; 200 with the counts (``UserErasureResource``),
    ///   all zero when the hub held nothing.
    func addUserDataRoutes(to router: HubRouter) {
        let user = "/v1/apps/:app/users/:userId"
        router.get(RouterPath(user + "/export")) { request, context in
            let app = try pathApp(request, context: context, caller: .publisherOrAdmin)
            let caller = try userDataCaller(request, app: app)
            let export = try await hub.exportUser(app: app.id, user: try context.pathParameter("userId"), by: caller)
            return try JSON.response(UserExportResource(export))
        }
        router.delete(RouterPath(user)) { request, context in
            let app = try pathApp(request, context: context, caller: .publisherOrAdmin)
            let caller = try userDataCaller(request, app: app)
            let report = try await hub.eraseUser(app: app.id, user: try context.pathParameter("userId"), by: caller)
            return try JSON.response(UserErasureResource(report))
        }
    }

    /// Authenticates a publisher key of `app` or the admin token, and names the caller for the
    /// audit line: `publisher <name>` or `admin`.
    private func userDataCaller(_ request: Request, app: CrossDeviceApp) throws -> String {
        try authenticatePublisherOrAdmin(request, app: app)
        let token = try bearerToken(request, expecting: "publisher key or admin token")
        let publisher = app.publishers.first { $0.key.constantTimeEquals(token) }
        return publisher.map { "publisher \($0.name)" } ?? "admin"
    }
}

/// `GET /v1/apps/{app}/users/{userId}/export`: every notification (as the history shows it) with
/// its receipts (as `…/deliveries` shows them), the endpoints (tokens masked), the tags, every
/// outbox row, and the broadcasts whose user list names the user.
struct UserExportResource: Encodable, Sendable {
    struct Notification: Encodable, Sendable {
        var notification: NotificationResource
        var deliveries: DeliveryReceiptList
    }

    var appId: String
    var userId: String
    var exportedDateTime: Date
    var notifications: [Notification]
    var endpoints: [ExportedEndpoint]
    var tags: [String]
    var deliveries: [ExportedDelivery]
    var broadcasts: [String]

    init(_ export: UserExport) {
        appId = export.appId
        userId = export.userId
        exportedDateTime = export.exportedAt
        notifications = export.notifications.map { entry in
            Notification(
                notification: NotificationResource(entry.notification),
                deliveries: DeliveryReceiptList(notification: entry.notification, receipts: entry.receipts))
        }
        endpoints = export.record.endpoints.map(ExportedEndpoint.init)
        tags = export.record.tags
        deliveries = export.record.deliveries.map(ExportedDelivery.init)
        broadcasts = export.record.broadcasts
    }
}

/// An endpoint as the admin's user endpoint list shows it, with its attributes and its push token
/// masked to the last 6 characters.
struct ExportedEndpoint: Encodable, Sendable {
    var endpoint: EndpointResource
    var token: String?
    var attributes: [String: String]

    init(_ endpoint: Endpoint) {
        self.endpoint = EndpointResource(endpoint, includeUser: true)
        token = endpoint.token.map(Self.masked)
        attributes = endpoint.attributes
    }

    /// `…` and the last 6 characters; a token of 6 characters or fewer shows none of them.
    static func masked(_ token: String) -> String {
        token.count > 6 ? "…" + token.suffix(6) : "…"
    }

    private enum CodingKeys: String, CodingKey { case token, attributes }

    func encode(to encoder: any Encoder) throws {
        try endpoint.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(token, forKey: .token)
        try container.encode(attributes, forKey: .attributes)
    }
}

/// One outbox row of the user: the delivery as a receipt shows it, with its endpoint, transport
/// and notification.
struct ExportedDelivery: Encodable, Sendable {
    var attempt: DeliveryAttemptResource
    var endpointId: String
    var transport: String
    var notificationId: String?
    var changeVersion: Int64

    init(_ trace: DeliveryTrace) {
        attempt = DeliveryAttemptResource(DeliveryReceipt.Attempt(trace))
        endpointId = trace.delivery.endpointId
        transport = trace.transport.rawValue
        notificationId = trace.delivery.notificationId
        changeVersion = trace.delivery.changeVersion
    }

    private enum CodingKeys: String, CodingKey { case endpointId, transport, notificationId, changeVersion }

    func encode(to encoder: any Encoder) throws {
        try attempt.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(endpointId, forKey: .endpointId)
        try container.encode(transport, forKey: .transport)
        try container.encodeIfPresent(notificationId, forKey: .notificationId)
        try container.encode(changeVersion, forKey: .changeVersion)
    }
}

/// `DELETE /v1/apps/{app}/users/{userId}`: what went, and how the devices were told.
struct UserErasureResource: Encodable, Sendable {
    struct Devices: Encodable, Sendable {
        /// Push endpoints whose provider took the erasure tap.
        var tapped: Int
        /// Push endpoints whose provider refused the tap or failed.
        var notReached: Int
        /// Push endpoints whose provider had not answered at the tap timeout.
        var unanswered: Int
        /// Polling endpoints woken.
        var pollingWoken: Int
    }

    var erased: UserErasure
    var devices: Devices

    init(_ report: UserErasureReport) {
        erased = report.erased
        devices = Devices(
            tapped: report.devicesTapped, notReached: report.devicesNotReached, unanswered: report.devicesUnanswered,
            pollingWoken: report.pollingWoken)
    }
}
