import Dispatch
import Foundation
import HubCore
import HubPolling
import Hummingbird

extension HubAPI {
    /// Device routes (`Authorization: Bearer <user token>` of one of the app's identity
    /// registrations). The user always comes from the token, so a device only ever sees and
    /// changes its own user's data in the app of the path.
    ///
    /// - `PUT /v1/apps/{app}/me/endpoints/{endpointId}`: register (201) or refresh (200).
    /// - `GET /v1/apps/{app}/me/endpoints?limit=&after=` (paged, see ``EndpointPaging``),
    ///   `GET|DELETE /v1/apps/{app}/me/endpoints/{endpointId}`. Registering a new endpoint past the
    ///   user's limit (``EndpointLimit``) is a 409.
    /// - `GET /v1/apps/{app}/me/feed?cursor=&limit=&wait=`: changes since a cursor; `wait` long-polls;
    ///   `Accept: text/event-stream` streams them (see `ServerSentEvents.swift`).
    /// - `GET /v1/apps/{app}/me/notifications?readState=&userActionState=&status=&limit=`: history.
    /// - `GET|PATCH /v1/apps/{app}/me/notifications/{id}`: one notification; PATCH changes
    ///   `readState` / `userActionState` (answering the caller's badge in `X-Hub-Badge` when the
    ///   app shows the hub's count) and taps the user's other endpoints (`X-Hub-Endpoint`
    ///   names the caller's).
    /// - `POST /v1/apps/{app}/me/subscription`: the Graph `X-UNS-ID` of this user.
    /// - `GET /v1/apps/{app}/webpush`: the app's VAPID public key (`applicationServerKey`) a page
    ///   subscribes with; 404 `not-configured` when the app has no Web Push credentials.
    ///
    /// A feed, history or notification read that names the caller's endpoint (`X-Hub-Endpoint`)
    /// shows only the notifications whose `targetPolicy` includes that endpoint's platform; every
    /// read is as of now (``NotificationView``: expiry exact, no payload in tombstones).
    func addDeviceRoutes(to router: HubRouter) {
        let me = "/v1/apps/:app/me"
        router.put(RouterPath(me + "/endpoints/:endpointId")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let id = try context.pathParameter("endpointId")
            var request = request
            let body = RegistrationBody(try await request.jsonObject(maxBytes: configuration.maxBodyBytes))
            if !body.reader.errors.isEmpty { throw HubError.invalid(body.reader.errors) }
            let existed = try await existingEndpoint(app: app, user: user, id: id) != nil
            let endpoint = try await hub.registerEndpoint(app: app.id, user: user, id: id, body.registration)
            return try JSON.response(EndpointResource(endpoint), status: existed ? .ok : .created)
        }
        router.get(RouterPath(me + "/endpoints")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            var errors: [HubError.FieldError] = []
            let paging = EndpointPaging(request, appWide: false, errors: &errors)
            if !errors.isEmpty { throw HubError.invalid(errors) }
            let page = try await hub.endpoints(app: app.id, user: user, after: paging.after, limit: paging.limit)
            let cursor = page.next?.endpointId
            return try JSON.response(
                EndpointList(
                    endpoints: page.endpoints.map { EndpointResource($0) }, nextAfter: cursor,
                    next: cursor.map { paging.nextLink("/v1/apps/\(Self.segment(app.id))/me/endpoints", cursor: $0) }))
        }
        router.get(RouterPath(me + "/endpoints/:endpointId")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let endpoint = try await hub.endpoint(app: app.id, user: user, id: try context.pathParameter("endpointId"))
            return try JSON.response(EndpointResource(endpoint))
        }
        router.delete(RouterPath(me + "/endpoints/:endpointId")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            try await hub.unregisterEndpoint(app: app.id, user: user, id: try context.pathParameter("endpointId"))
            return Response(status: .noContent)
        }
        router.get(RouterPath(me + "/feed")) { request, context in
            let start = DispatchTime.now().uptimeNanoseconds
            let (app, user) = try await authenticateDevice(request, context: context)
            return try await feed(request, context: context, app: app, user: user, start: start)
        }
        router.get(RouterPath(me + "/notifications")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let platform = try await binding(of: try callerEndpoint(request), app: app, user: user).platform
            let history = try await hub.history(
                app: app.id, user: user, filter: try historyFilter(request), reader: .device(platform))
            return JSON.response(NotificationList(notifications: history.map(NotificationResource.init)))
        }
        router.get(RouterPath(me + "/notifications/:id")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let platform = try await binding(of: try callerEndpoint(request), app: app, user: user).platform
            let found = try await hub.notification(
                app: app.id, user: user, id: try context.pathParameter("id"), reader: .device(platform))
            return JSON.response(NotificationResource(found))
        }
        router.patch(RouterPath(me + "/notifications/:id")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let endpoint = try callerEndpoint(request)
            var request = request
            let body = StateBody(try await request.jsonObject(maxBytes: configuration.maxBodyBytes))
            if !body.reader.errors.isEmpty { throw HubError.invalid(body.reader.errors) }
            let updated = try await hub.updateState(
                app: app.id, user: user, id: try context.pathParameter("id"), readState: body.readState,
                userActionState: body.userActionState, fromEndpoint: endpoint)
            var response = JSON.response(NotificationResource(updated))
            // The device that made the change is not tapped: it gets its badge here instead.
            if app.delivery.badge != nil,
                let platform = try await binding(of: endpoint, app: app, user: user).platform,
                let badge = try await hub.badge(app: app.id, user: user, platform: platform)
            {
                response.headers[.hubBadge] = String(badge)
            }
            return response
        }
        router.post(RouterPath(me + "/subscription")) { request, context in
            let (app, user) = try await authenticateDevice(request, context: context)
            let expiry = hub.now().addingTimeInterval(configuration.subscriptionLifetime.seconds)
            let subscription = TokenCodec.Subscription(
                app: app.id, user: user,
                expiration: Date(timeIntervalSince1970: expiry.timeIntervalSince1970.rounded(.down)))
            return try JSON.response(
                SubscriptionResource(
                    id: tokens.subscriptionID(subscription), expirationDateTime: subscription.expiration))
        }
        router.get(RouterPath("/v1/apps/:app/webpush")) { request, context in
            let (app, _) = try await authenticateDevice(request, context: context)
            return try JSON.response(WebPushKeyResource(applicationServerKey: try applicationServerKey(of: app)))
        }
    }

    /// The public key of the app's Web Push credentials (never the private key).
    private func applicationServerKey(of app: CrossDeviceApp) throws -> String {
        guard
            let credentials = app.credentials[transport: TransportID("webpush")] as? any ApplicationServerKeyCredentials
        else {
            throw Problem(
                .notConfigured,
                "The app \(app.id) has no Web Push credentials: give it credentials.webpush (vapidPrivateKey and "
                    + "subject) in hub.yaml; `hub map-app --webpush-subject` makes the key.")
        }
        return credentials.applicationServerKey
    }

    private func existingEndpoint(app: CrossDeviceApp, user: String, id: String) async throws -> Endpoint? {
        do {
            return try await hub.endpoint(app: app.id, user: user, id: id)
        } catch let error as HubError where error.code == .notFound {
            return nil
        }
    }

    // MARK: Feed

    /// `GET …/me/feed`: one page (poll or long-poll) or, with `Accept: text/event-stream`, a stream.
    private func feed(
        _ request: Request, context: HubRequestContext, app: CrossDeviceApp, user: String, start: UInt64
    ) async throws -> Response {
        let query = request.uri.queryParameters
        var errors: [HubError.FieldError] = []
        var limit = 100
        if let text = query["limit"] {
            if let value = Int(text), (1...1000).contains(value) {
                limit = value
            } else {
                errors.append(.init(field: "limit", message: "must be a whole number from 1 to 1000"))
            }
        }
        var wait: Duration?
        if let text = query["wait"] {
            if let seconds = Double(text), seconds >= 0, seconds.isFinite {
                wait = min(.milliseconds(Int64(min(seconds, 3600) * 1000)), configuration.maxWait)
            } else {
                errors.append(.init(field: "wait", message: "must be a number of seconds, 0 or more"))
            }
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        let streaming = request.headers[.accept]?.lowercased().contains("text/event-stream") ?? false
        let cursor = (streaming ? request.headers[.lastEventID] : nil) ?? query["cursor"].map(String.init)
        let version = try cursor.map { try self.version(fromCursor: $0, app: app, user: user) } ?? 0
        let binding = try await binding(of: try callerEndpoint(request), app: app, user: user)
        if streaming {
            return try serverSentEvents(
                request, context: context, app: app, user: user, after: version, binding: binding, start: start)
        }
        if let wait, wait > .zero {
            let feed = ParkedLongPoll.Feed(app: app, user: user, version: version, limit: limit, binding: binding)
            return try await parkedLongPoll(feed, wait: wait, request: request, context: context, start: start)
        }
        let page = try await sync(app: app, user: user, after: version, limit: limit, binding: binding)
        HubMetrics.sync(app: app.id, mode: .poll)
        return JSON.response(pageResource(page, app: app, user: user))
    }

    func pageResource(_ page: FeedPage, app: CrossDeviceApp, user: String) -> FeedPageResource {
        FeedPageResource(
            changes: page.changes.map(NotificationResource.init),
            cursor: tokens.cursor(version: page.version, app: app.id, user: user), hasMore: page.hasMore)
    }

    /// A long-poll: reads the feed (unless the cursor is at the newest version this instance
    /// committed) and answers when it found changes; otherwise returns the placeholder of a
    /// ``ParkedLongPoll``, which waits without a task (``ParkingHandler``) and answers later.
    /// Every wait goes this way; a connection that cannot park (a server built without
    /// ``GuardedHTTP1Channel``) is answered 503 (``Problem/cannotWait``).
    private func parkedLongPoll(
        _ feed: ParkedLongPoll.Feed, wait: Duration, request: Request, context: HubRequestContext, start: UInt64
    ) async throws -> Response {
        guard let parked = ParkedResponse.make(on: context.channel), let signals = hub.waitingRoom else {
            throw Problem.cannotWait
        }
        let ticket = signals.ticket()
        if !signals.isCurrent(FeedKey(appId: feed.app.id, userId: feed.user), version: feed.version) {
            let page = try await sync(
                app: feed.app, user: feed.user, after: feed.version, limit: feed.limit, binding: feed.binding
            )
            if !page.changes.isEmpty {
                HubMetrics.sync(app: feed.app.id, mode: .longpoll)
                return JSON.response(pageResource(page, app: feed.app, user: feed.user))
            }
        }
        if signals.isShutDown { throw Problem.shuttingDown }
        let poll = ParkedLongPoll(
            api: self, signals: signals, feed: feed, response: parked,
            log: ParkedRequestLog(request, context: context, api: self, app: feed.app.id, start: start),
            connection: context.connection)
        poll.park(after: ticket, wait: wait)
        return Response(status: .ok, headers: parked.placeholderHeaders)
    }

    func version(fromCursor cursor: String, app: CrossDeviceApp, user: String) throws -> Int64 {
        guard let version = tokens.version(fromCursor: cursor, app: app.id, user: user) else {
            throw Problem(
                .invalidCursor,
                "The cursor was not issued for this user's feed of this app, or it was altered; sync again without a cursor."
            )
        }
        return version
    }

    /// How a sync relates to the caller's endpoint (`X-Hub-Endpoint`).
    enum EndpointBinding: Sendable {
        /// No endpoint named, or one this user does not have: any change of the feed wakes a wait.
        case none
        /// A polling endpoint: only deliveries to it wake a wait, so the device's own changes
        /// (universal dismiss) do not; the sync is recorded for fallback policies.
        case polling(String, Platform)
        /// A push endpoint syncing by hand: any change wakes a wait; the sync is recorded.
        case push(String, Platform)

        /// The named endpoint's platform: the feed shows only what targets it.
        var platform: Platform? {
            switch self {
            case .none: nil
            case .polling(_, let platform), .push(_, let platform): platform
            }
        }
    }

    func binding(of endpoint: String?, app: CrossDeviceApp, user: String) async throws -> EndpointBinding {
        guard let endpoint, let found = try await existingEndpoint(app: app, user: user, id: endpoint) else {
            return .none
        }
        return hub.router.wakesInProcess(found.transport)
            ? .polling(endpoint, found.platform) : .push(endpoint, found.platform)
    }

    /// One read of the feed (it never waits: a waiting request parks, ``ParkedLongPoll``).
    func sync(
        app: CrossDeviceApp, user: String, after version: Int64, limit: Int, binding: EndpointBinding
    ) async throws -> FeedPage {
        switch binding {
        case .none:
            return try await hub.feed(app: app.id, user: user, after: version, limit: limit)
        case .polling(let endpoint, let platform):
            return try await hub.feed(
                app: app.id, user: user, after: version, limit: limit, endpoint: endpoint,
                platform: platform)
        case .push(let endpoint, let platform):
            let page = try await hub.feed(
                app: app.id, user: user, after: version, limit: limit, platform: platform)
            try await hub.recordSync(app: app.id, user: user, endpoint: endpoint)
            return page
        }
    }
}
