import Foundation

/// What a device sends to register or refresh its endpoint.
public struct EndpointRegistration: Sendable, Hashable {
    public var platform: Platform
    public var appId: String
    public var transport: TransportID
    /// The device's push token or channel URI; `nil` for tokenless transports.
    public var token: String?
    /// What the transport needs besides the token (such as the APNs `environment`).
    public var attributes: [String: String]
    public var appDisplayName: String?

    public init(
        platform: Platform, appId: String, transport: TransportID, token: String? = nil,
        attributes: [String: String] = [:], appDisplayName: String? = nil
    ) {
        self.platform = platform
        self.appId = appId
        self.transport = transport
        self.token = token
        self.attributes = attributes
        self.appDisplayName = appDisplayName
    }
}

extension Hub {
    /// Registers or refreshes one endpoint of a user. Re-registering revives an endpoint a provider
    /// had reported dead.
    public func registerEndpoint(
        app appID: String, user userID: String, id endpointID: String, _ registration: EndpointRegistration
    ) async throws -> Endpoint {
        let app = try app(appID)
        try Identifier.check(userID, field: "userId")
        var errors: [HubError.FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(.init(field: field, message: message)) }
        if !Self.isValidEndpointID(endpointID) {
            fail("endpointId", "use 1–128 letters, digits, '.', '_' or '-'")
        }
        let platform = registration.platform
        if let ids = app.platforms[platform] {
            if !ids.contains(registration.appId) {
                fail(
                    "appId",
                    "'\(registration.appId)' is not one of this app's \(platform) IDs (\(ids.joined(separator: ", ")))")
            }
        } else {
            let supported = app.supportedPlatforms.map(\.rawValue).joined(separator: ", ")
            fail("platform", "'\(platform)' is not a platform of this app (\(supported))")
        }
        let transport = registration.transport
        let plugin = router.transport(transport)
        if let plugin, !plugin.serves(platform) {
            let allowed = router.transports(for: platform).map(\.rawValue).joined(separator: ", ")
            fail("transport", "\(platform) devices use \(allowed.isEmpty ? "no transport of this hub" : allowed)")
        } else if plugin == nil {
            let enabled = router.transportIDs.map(\.rawValue).joined(separator: ", ")
            fail("transport", "'\(transport)' is not enabled on this hub (enabled: \(enabled))")
        }
        let tokenless = plugin?.capabilities.contains(.tokenless) ?? false
        let token = registration.token?.trimmingCharacters(in: .whitespaces)
        if tokenless {
            if token?.isEmpty == false { fail("token", "\(transport) endpoints have no token") }
        } else if token?.isEmpty ?? true {
            fail("token", "\(transport) endpoints need the device's token or channel URI")
        } else if let token, token.utf8.count > 4096 {
            fail("token", "is longer than 4096 bytes")
        } else if let token, !Identifier.isPrintable(token) {
            fail("token", "contains control or bidi characters")
        }
        for (key, value) in registration.attributes.sorted(by: { $0.key < $1.key }) {
            if let plugin, !plugin.endpointAttributes.contains(key) {
                fail(key, "does not apply to \(transport) endpoints")
            } else if value.utf8.count > 256 || !Identifier.isPrintable(value) {
                fail(key, "must be at most 256 printable bytes")
            }
        }
        if let name = registration.appDisplayName, name.utf8.count > 256 {
            fail("appDisplayName", "must be at most 256 bytes")
        } else if let name = registration.appDisplayName, !Identifier.isPrintable(name) {
            fail("appDisplayName", "contains control or bidi characters")
        }
        var endpoint = Endpoint(
            id: endpointID, appId: app.id, userId: userID, platform: platform, platformAppId: registration.appId,
            transport: transport, token: tokenless ? nil : token, attributes: registration.attributes,
            appDisplayName: registration.appDisplayName, registeredAt: now())
        if errors.isEmpty, let plugin {
            endpoint = plugin.prepare(endpoint, for: app)
            if let problem = plugin.problem(registering: endpoint, for: app) { fail(plugin.tokenField, problem) }
        }
        if errors.isEmpty, let plugin, let problem = await plugin.check(registering: endpoint, for: app) {
            fail(plugin.tokenField, problem)
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        endpoint = try await store.upsertEndpoint(endpoint, limit: endpointLimit(of: app))
        logger.info(
            "endpoint registered",
            metadata: ["app": "\(app.id)", "endpoint": "\(endpointID)", "transport": "\(transport)"])
        return endpoint
    }

    /// The limit on the endpoints of one user of `app`: the app's own, else the hub's.
    /// - Parameter app: a configured app.
    public func endpointLimit(of app: CrossDeviceApp) -> EndpointLimit {
        EndpointLimit(maxPerUser: app.maxEndpointsPerUser ?? configuration.maxEndpointsPerUser)
    }

    public func endpoints(app appID: String, user userID: String) async throws -> [Endpoint] {
        try await store.endpoints(try feedKey(appID, userID))
    }

    public func endpoint(app appID: String, user userID: String, id: String) async throws -> Endpoint {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "endpointId")
        guard let found = try await store.endpoint(key, id: id) else {
            throw HubError(.notFound, "No endpoint '\(id)' for this user.")
        }
        return found
    }

    public func unregisterEndpoint(app appID: String, user userID: String, id: String) async throws {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "endpointId")
        guard try await store.deleteEndpoint(key, id: id) else {
            throw HubError(.notFound, "No endpoint '\(id)' for this user.")
        }
    }

    /// The app's endpoints, optionally only those in `state` (`inactive` = the feedback list).
    public func appEndpoints(app appID: String, state: EndpointState? = nil) async throws -> [Endpoint] {
        try await store.endpoints(appId: try app(appID).id, state: state)
    }

    /// One page of the app's endpoints (ordered by user, then ID), optionally only those in `state`.
    /// - Parameters:
    ///   - appID: the app.
    ///   - state: only endpoints in this state (`inactive` = the feedback list); `nil`: all.
    ///   - after: where the page starts (the previous page's ``EndpointPage/next``); `nil`: the start.
    ///   - limit: the most endpoints on the page (1 to ``EndpointPage/maxSize``).
    public func appEndpoints(
        app appID: String, state: EndpointState? = nil, after: EndpointPosition?, limit: Int
    ) async throws -> EndpointPage {
        let limit = min(max(1, limit), EndpointPage.maxSize)
        let read = try await store.endpoints(appId: try app(appID).id, state: state, after: after, limit: limit + 1)
        return EndpointPage(reading: read, limit: limit)
    }

    /// One page of a user's endpoints, ordered by ID.
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - after: the last endpoint ID of the previous page; `nil`: the start.
    ///   - limit: the most endpoints on the page (1 to ``EndpointPage/maxSize``).
    public func endpoints(
        app appID: String, user userID: String, after: String?, limit: Int
    ) async throws -> EndpointPage {
        let limit = min(max(1, limit), EndpointPage.maxSize)
        let all = try await store.endpoints(try feedKey(appID, userID))
        let position = after.map { EndpointPosition(userId: userID, endpointId: $0) }
        return EndpointPage(
            reading: Array(all.filter { position?.precedes($0) ?? true }.prefix(limit + 1)), limit: limit)
    }

    public func deliveryStatistics() async throws -> DeliveryStatistics {
        try await store.deliveryStatistics()
    }

    /// Pending and suspended deliveries, without the finished counts (see ``DeliveryReportStore/outboxDepth()``).
    public func outboxDepth() async throws -> DeliveryStatistics {
        try await store.outboxDepth()
    }

    /// Endpoint IDs are ``Identifier``s of a narrower shape, so that they can be named in a header
    /// (`X-Hub-Endpoint`) and logged as they are.
    static func isValidEndpointID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 128
            && id.unicodeScalars.allSatisfy { $0.isASCIIAlphanumeric || $0 == "." || $0 == "_" || $0 == "-" }
    }
}

extension Hub {
    /// What became of the notification `id` (hub ID, else `appNotificationId`) on each of the
    /// user's endpoints, active or not (see ``DeliveryReceipt``), with the notification as its
    /// publisher reads it.
    /// - Throws: ``HubError/Code/notFound`` when the user has no such notification (or its
    ///   deliveries were purged with it).
    public func deliveryReceipts(
        app appID: String, user userID: String, id: String
    ) async throws -> (notification: UserNotification, receipts: [DeliveryReceipt]) {
        let key = try feedKey(appID, userID)
        try Identifier.check(id, field: "id")
        guard let trace = try await store.deliveryTrace(key, id: id) else {
            throw HubError(.notFound, "No notification '\(id)' for this user.")
        }
        let endpoints = try await store.endpoints(key)
        let router = router
        let receipts = DeliveryReceipt.receipts(trace, endpoints: endpoints) { router.wakesInProcess($0) }
        let view = NotificationView(now: now(), reader: .publisher)
        return (view.render(trace.notification), receipts)
    }
}
