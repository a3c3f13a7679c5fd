import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/endpoints?state=active|inactive&user=…&endpoint=…&after=…`: the app's
/// endpoints by state, searched by the start of the user ID and of the endpoint ID, 50 a page
/// with a cursor (``Hub/consoleEndpoints(app:state:userPrefix:endpointPrefix:after:limit:)``).
/// The inactive list is the feedback list: endpoints a provider reported dead, with its reason
/// and since when. Push tokens are never shown.
extension Console {
    static let endpointsPageSize = 50

    func addEndpointsPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/endpoints") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            var query = ConsoleQuery(request)
            let state: EndpointState = query.text("state") == EndpointState.inactive.rawValue ? .inactive : .active
            let user = query.text("user") ?? ""
            let endpoint = query.text("endpoint") ?? ""
            let after = query.endpointPosition()
            let counts = try await hub.store.endpointCounts(appId: app.id)
            let total = (
                active: counts.map(\.active).reduce(0, +), inactive: counts.map(\.inactive).reduce(0, +)
            )
            let tabs: HTML = """
                <nav class="tabs" aria-label="Endpoint state"><ul>\
                \(tab("Active", count: total.active, state: .active, current: state, app: app))\
                \(tab("Inactive", count: total.inactive, state: .inactive, current: state, app: app))\
                </ul></nav>
                """
            let form: HTML = """
                <form method="get" action="\(ConsolePaths.app(app.id, "/endpoints"))" class="inline-form" \
                aria-label="Search endpoints"><input type="hidden" name="state" value="\(state.rawValue)">\
                <p><label for="user">User ID starts with</label> <input id="user" name="user" value="\(user)" \
                autocomplete="off" spellcheck="false"></p>\
                <p><label for="endpoint">Endpoint ID starts with</label> <input id="endpoint" name="endpoint" \
                value="\(endpoint)" autocomplete="off" spellcheck="false"></p>\
                <p><button type="submit">Search</button></p></form>
                """
            guard query.errors.isEmpty else {
                return ConsoleView(
                    title: "Endpoints: \(state.rawValue)", section: "endpoints", app: app, status: .badRequest,
                    content: "\(tabs)\n\(query.notice)\n\(form)")
            }
            let page = try await hub.consoleEndpoints(
                app: app.id, state: state, userPrefix: user, endpointPrefix: endpoint, after: after,
                limit: Self.endpointsPageSize)
            var table: HTML
            let searched = !user.isEmpty || !endpoint.isEmpty
            if page.endpoints.isEmpty {
                table =
                    searched ? "<p>No \(state.rawValue) endpoints match.</p>" : "<p>No \(state.rawValue) endpoints.</p>"
            } else if state == .inactive {
                table = ConsoleLayout.table(
                    caption: "Inactive endpoints (the feedback list)",
                    headers: ["User", "Endpoint", "Platform · app ID", "Transport", "Reason", "Inactive since"],
                    rows: page.endpoints.map { endpoint in
                        """
                        <tr><td>\(ConsoleLayout.id(endpoint.userId))</td>\
                        <th scope="row">\(ConsoleLayout.id(endpoint.id))</th>\
                        <td>\(endpoint.platform.rawValue) · \(ConsoleLayout.id(endpoint.platformAppId))</td>\
                        <td>\(endpoint.transport.rawValue)</td>\
                        <td>\(endpoint.inactiveReason ?? "no reason given")</td>\
                        <td>\(endpoint.inactiveSince.map { ConsoleLayout.time($0) } ?? "—")</td></tr>
                        """
                    })
            } else {
                table = ConsoleLayout.table(
                    caption: "Active endpoints",
                    headers: ["User", "Endpoint", "Platform · app ID", "Transport", "Registered", "Last sync"],
                    rows: page.endpoints.map { endpoint in
                        """
                        <tr><td>\(ConsoleLayout.id(endpoint.userId))</td>\
                        <th scope="row">\(ConsoleLayout.id(endpoint.id))</th>\
                        <td>\(endpoint.platform.rawValue) · \(ConsoleLayout.id(endpoint.platformAppId))</td>\
                        <td>\(endpoint.transport.rawValue)</td><td>\(ConsoleLayout.time(endpoint.registeredAt))</td>\
                        <td>\(endpoint.lastSyncAt.map { ConsoleLayout.time($0) } ?? "—")</td></tr>
                        """
                    })
            }
            let parameters: [(String, String?)] = [("state", state.rawValue), ("user", user), ("endpoint", endpoint)]
            if let next = page.next {
                let link = ConsoleQuery.link(
                    ConsolePaths.app(app.id, "/endpoints"), parameters + [("after", EndpointPaging.cursor(next))])
                table = "\(table)\n<p class=\"pager\"><a href=\"\(link)\" rel=\"next\">Next page</a></p>"
            }
            if after != nil {
                let first = ConsoleQuery.link(ConsolePaths.app(app.id, "/endpoints"), parameters)
                table = "\(table)\n<p class=\"pager\"><a href=\"\(first)\">First page</a></p>"
            }
            return ConsoleView(
                title: "Endpoints: \(state.rawValue)", section: "endpoints", app: app,
                content: "\(tabs)\n\(form)\n<section aria-label=\"Endpoints\">\(table)</section>")
        }
    }

    private func tab(
        _ title: String, count: Int, state: EndpointState, current: EndpointState, app: CrossDeviceApp
    ) -> HTML {
        ConsoleLayout.link(
            "\(title) (\(count))", to: ConsolePaths.app(app.id, "/endpoints?state=\(state.rawValue)"),
            current: state == current)
    }
}
