import Foundation
import HubCore
import Hummingbird

extension HubAPI {
    /// Publisher routes (`Authorization: Bearer <publisher key>` of the app in the path):
    ///
    /// - `POST /v1/apps/{app}/users/{userId}/notifications`: publish (Graph-shaped body); 201 with
    ///   the notification and `Location`, or 200 when the `appNotificationId` existed (updated).
    /// - `GET /v1/apps/{app}/users/{userId}/notifications`: the user's history.
    /// - `GET /v1/apps/{app}/users/{userId}/notifications/{id}`: one notification, by the hub's ID
    ///   or the `appNotificationId`.
    /// - `DELETE /v1/apps/{app}/users/{userId}/notifications/{appNotificationId}`: 204; devices see
    ///   a tombstone.
    /// - `GET /v1/apps/{app}/users/{userId}/notifications/{id}/deliveries` (publisher key or admin
    ///   token): the notification's delivery receipts, one row per endpoint of the user.
    /// - `POST /beta/me/notifications` with `X-UNS-ID`: Graph's publish, for code written against
    ///   Graph Notifications (the subscription ID names the app and the user).
    func addPublisherRoutes(to router: HubRouter) {
        let notifications = "/v1/apps/:app/users/:userId/notifications"
        router.post(RouterPath(notifications)) { request, context in
            let app = try pathApp(request, context: context, caller: .publisher)
            return try await publish(request, app: app) { try context.pathParameter("userId") }
        }
        router.get(RouterPath(notifications)) { request, context in
            let (app, user) = try publisherScope(request, context)
            let history = try await hub.history(app: app.id, user: user, filter: try historyFilter(request))
            return JSON.response(NotificationList(notifications: history.map(NotificationResource.init)))
        }
        router.get(RouterPath(notifications + "/:id")) { request, context in
            let (app, user) = try publisherScope(request, context)
            let found = try await hub.notification(app: app.id, user: user, id: try context.pathParameter("id"))
            return JSON.response(NotificationResource(found))
        }
        router.get(RouterPath(notifications + "/:id/deliveries")) { request, context in
            let app = try pathApp(request, context: context, caller: .publisherOrAdmin)
            try authenticatePublisherOrAdmin(request, app: app)
            let (notification, receipts) = try await hub.deliveryReceipts(
                app: app.id, user: try context.pathParameter("userId"), id: try context.pathParameter("id"))
            return try JSON.response(DeliveryReceiptList(notification: notification, receipts: receipts))
        }
        // One parameter name per path position (the router requires it): for DELETE, `id` is the
        // appNotificationId.
        router.delete(RouterPath(notifications + "/:id")) { request, context in
            let (app, user) = try publisherScope(request, context)
            _ = try await hub.deleteNotification(app: app.id, user: user, id: try context.pathParameter("id"))
            return Response(status: .noContent)
        }
        router.post("/beta/me/notifications") { request, context in
            // The key first: without one of some app's keys, nothing tells whether an X-UNS-ID is valid.
            let keyApps = try authenticatePublisherOfAnyApp(request)
            let subscription = try graphSubscription(request)
            guard keyApps.contains(subscription.app) else {
                throw Problem.unauthorized("The publisher key is not one of the app '\(subscription.app)'.")
            }
            return try await publish(request, app: try hub.app(subscription.app), graph: true) { subscription.user }
        }
    }

    /// The app and user of a publisher route, after checking the publisher key.
    private func publisherScope(_ request: Request, _ context: HubRequestContext) throws -> (CrossDeviceApp, String) {
        let app = try pathApp(request, context: context, caller: .publisher)
        try authenticatePublisher(request, app: app)
        return (app, try context.pathParameter("userId"))
    }

    /// Authenticates, reads and publishes; decode errors and the hub's own validation errors are
    /// answered together in one 400. `user` is read after authentication. `graph` answers in
    /// Graph's response shape (``GraphNotificationResource``).
    private func publish(
        _ request: Request, app: CrossDeviceApp, graph: Bool = false, user readUser: () throws -> String
    ) async throws -> Response {
        do {
            try authenticatePublisher(request, app: app)
            let user = try readUser()
            var request = request
            let body = PublishBody(try await request.jsonObject(maxBytes: configuration.maxBodyBytes), app: app)
            if !body.reader.errors.isEmpty {
                let semantic = hub.validate(body.draft, for: app, userID: user, now: hub.now())
                throw HubError.invalid(body.merged(with: semantic))
            }
            let notification: UserNotification
            let created: Bool
            do {
                (notification, created) = try await hub.publish(app: app.id, user: user, body.draft)
            } catch let error as HubError where body.graphFallback && !error.fieldErrors.isEmpty {
                throw HubError(error.code, error.message, fieldErrors: error.fieldErrors.map(body.named))
            }
            HubMetrics.publish(app: app.id, result: created ? "created" : "updated")
            var headers: HTTPFields = [:]
            if created {
                headers[.location] =
                    "/v1/apps/\(Self.segment(app.id))/users/\(Self.segment(user))/notifications/\(Self.segment(notification.id))"
            }
            let status: HTTPResponse.Status = created ? .created : .ok
            if graph {
                return try JSON.response(GraphNotificationResource(notification), status: status, headers: headers)
            }
            return JSON.response(NotificationResource(notification), status: status, headers: headers)
        } catch {
            HubMetrics.publishFailed(app: app, error: error)
            throw error
        }
    }

    /// The subscription an `X-UNS-ID` header names.
    private func graphSubscription(_ request: Request) throws -> TokenCodec.Subscription {
        try graphSubscription(id: request.headers.value(.unsID))
    }

    /// The subscription an `X-UNS-ID` value names (a header of the request, or of a request in a
    /// Graph batch).
    func graphSubscription(id header: String?) throws -> TokenCodec.Subscription {
        guard let id = header.map({ String(HTTPText.trimmed($0[...])) }), !id.isEmpty else {
            throw Problem(
                .invalidRequest,
                "Send the user's subscription ID in X-UNS-ID (the device gets it from POST /v1/apps/{app}/me/subscription).",
                errors: [.init(field: "X-UNS-ID", message: "is required")])
        }
        do throws(TokenCodec.SubscriptionError) {
            let subscription = try tokens.subscription(fromID: id, now: hub.now())
            guard Identifier.violation(in: subscription.app) == nil, Identifier.violation(in: subscription.user) == nil
            else { throw TokenCodec.SubscriptionError.malformed }
            return subscription
        } catch .malformed {
            throw Problem(
                .invalidSubscription,
                "The X-UNS-ID was not issued by this hub or was altered; the device gets a valid one from POST /v1/apps/{app}/me/subscription."
            )
        } catch .expired(let expiration) {
            throw Problem(
                .invalidSubscription,
                "The X-UNS-ID expired at \(expiration.formatted(JSON.dateStyle)); the device must get a new one from POST /v1/apps/{app}/me/subscription."
            )
        }
    }

    /// The history filter of `readState`, `userActionState`, `status` (`all` for any) and `limit`.
    func historyFilter(_ request: Request) throws -> HistoryFilter {
        let query = request.uri.queryParameters
        var filter = HistoryFilter()
        var errors: [HubError.FieldError] = []
        if let text = query["readState"].map(String.init) {
            filter.readState = ReadState(rawValue: text)
            if !ReadState.known.contains(ReadState(rawValue: text)) {
                errors.append(.init(field: "readState", message: "must be one of unread, read"))
            }
        }
        if let text = query["userActionState"].map(String.init) {
            filter.userActionState = UserActionState(rawValue: text)
            if !UserActionState.known.contains(UserActionState(rawValue: text)) {
                errors.append(
                    .init(
                        field: "userActionState", message: "must be one of noInteraction, activated, dismissed, snoozed"
                    ))
            }
        }
        if let text = query["status"].map(String.init) {
            filter.status = text == "all" ? nil : NotificationStatus(rawValue: text)
            if text != "all" && !NotificationStatus.known.contains(NotificationStatus(rawValue: text)) {
                errors.append(
                    .init(field: "status", message: "must be one of active, expired, deleted, scheduled, all"))
            }
        }
        if let text = query["limit"] {
            if let limit = Int(text), (1...1000).contains(limit) {
                filter.limit = limit
            } else {
                errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000"))
            }
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        return filter
    }

    /// A value percent-encoded for one path segment.
    static func segment(_ value: String) -> String {
        HTTPText.pathSegment(value)
    }
}
