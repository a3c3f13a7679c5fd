import HubCore
import Hummingbird

extension HubAPI {
    /// Admin routes (`Authorization: Bearer <admin token>`; 403 while no admin token is configured):
    ///
    /// - `GET /v1/apps`: the configured apps: IDs, names, platform app IDs, identity issuers,
    ///   credential and key *kinds*, publisher *names*. Never a secret.
    /// - `GET /v1/apps/{app}/endpoints?state=active|inactive&limit=&after=`: a page of the app's
    ///   endpoints; `inactive` is the feedback list of endpoints a provider reported dead.
    /// - `GET /v1/apps/{app}/users/{userId}/endpoints?limit=&after=`: a page of one user's endpoints.
    ///
    /// Listings are paged (``EndpointPaging``): `limit` (default 100, at most 1000) and `after`,
    /// the `nextAfter` of the previous page; `next` is the next page's path and query.
    /// - `GET /v1/apps/{app}/statistics`: outbox counts, and the app's deliveries suspended for a
    ///   configuration fault per transport with the latest reason.
    ///
    /// Endpoints are listed with their user but without their push token.
    func addAdminRoutes(to router: HubRouter) {
        router.get("/v1/apps") { request, _ in
            try authenticateAdmin(request)
            return try JSON.response(AppList(apps: hub.configuration.apps.map(AppResource.init)))
        }
        router.get("/v1/apps/:app/endpoints") { request, context in
            try authenticateAdmin(request)
            let app = try hub.app(try context.pathParameter("app"))
            var state: EndpointState?
            var errors: [HubError.FieldError] = []
            if let text = request.uri.queryParameters["state"].map(String.init) {
                if [EndpointState.active, .inactive].contains(EndpointState(rawValue: text)) {
                    state = EndpointState(rawValue: text)
                } else {
                    errors.append(.init(field: "state", message: "must be active or inactive"))
                }
            }
            let paging = EndpointPaging(request, appWide: true, errors: &errors)
            if !errors.isEmpty { throw HubError.invalid(errors) }
            let page = try await hub.appEndpoints(
                app: app.id, state: state, after: paging.after.flatMap(EndpointPaging.position), limit: paging.limit)
            let cursor = page.next.map(EndpointPaging.cursor)
            let path = "/v1/apps/\(Self.segment(app.id))/endpoints"
            return try JSON.response(
                EndpointList(
                    endpoints: page.endpoints.map { EndpointResource($0, includeUser: true) }, nextAfter: cursor,
                    next: cursor.map {
                        paging.nextLink(path, cursor: $0, extra: state.map { [("state", $0.rawValue)] } ?? [])
                    }))
        }
        router.get("/v1/apps/:app/users/:userId/endpoints") { request, context in
            try authenticateAdmin(request)
            let app = try hub.app(try context.pathParameter("app"))
            let user = try context.pathParameter("userId")
            var errors: [HubError.FieldError] = []
            let paging = EndpointPaging(request, appWide: false, errors: &errors)
            if !errors.isEmpty { throw HubError.invalid(errors) }
            let page = try await hub.endpoints(app: app.id, user: user, after: paging.after, limit: paging.limit)
            let cursor = page.next?.endpointId
            let path = "/v1/apps/\(Self.segment(app.id))/users/\(Self.segment(user))/endpoints"
            return try JSON.response(
                EndpointList(
                    endpoints: page.endpoints.map { EndpointResource($0, includeUser: true) }, nextAfter: cursor,
                    next: cursor.map { paging.nextLink(path, cursor: $0) }))
        }
        router.get("/v1/apps/:app/statistics") { request, context in
            try authenticateAdmin(request)
            let app = try hub.app(try context.pathParameter("app"))
            let statistics = try await hub.deliveryStatistics()
            return try JSON.response(
                StatisticsResource(
                    appId: app.id, scope: "hub", pending: statistics.pending, finished: statistics.finished,
                    suspended: statistics.suspended.filter { $0.appId == app.id }.map(SuspendedResource.init)))
        }
    }
}
