import HubCore
import Hummingbird

extension HubAPI {
    /// Admin routes (`Authorization: Bearer <admin token>`; 403 while no admin token is configured):
    ///
    /// - `GET /v1/apps`: the configured apps: IDs, names, platform app IDs, identity issuers,
    ///   credential and key *kinds*, publisher *names*. Never a secret.
    /// - `GET /v1/apps/{app}/endpoints?state=active|inactive`: the app's endpoints; `inactive` is
    ///   the feedback list of endpoints a provider reported dead.
    /// - `GET /v1/apps/{app}/users/{userId}/endpoints`: one user's endpoints.
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
            if let text = request.uri.queryParameters["state"].map(String.init) {
                guard [EndpointState.active, .inactive].contains(EndpointState(rawValue: text)) else {
                    throw HubError.invalid([.init(field: "state", message: "must be active or inactive")])
                }
                state = EndpointState(rawValue: text)
            }
            let endpoints = try await hub.appEndpoints(app: app.id, state: state)
            return try JSON.response(EndpointList(endpoints: endpoints.map { EndpointResource($0, includeUser: true) }))
        }
        router.get("/v1/apps/:app/users/:userId/endpoints") { request, context in
            try authenticateAdmin(request)
            let app = try hub.app(try context.pathParameter("app"))
            let endpoints = try await hub.endpoints(app: app.id, user: try context.pathParameter("userId"))
            return try JSON.response(EndpointList(endpoints: endpoints.map { EndpointResource($0, includeUser: true) }))
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
