import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/endpoints?state=active|inactive`: the app's endpoints by state. The
/// inactive list is the feedback list: endpoints a provider reported dead, with its reason and
/// since when. Push tokens are never shown.
extension Console {
    func addEndpointsPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/endpoints") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            let asked = request.uri.queryParameters["state"].map(String.init)
            let state: EndpointState = asked == EndpointState.inactive.rawValue ? .inactive : .active
            let endpoints = try await hub.appEndpoints(app: app.id, state: state)
            let other = try await hub.appEndpoints(app: app.id, state: state == .active ? .inactive : .active)
            let counts = (
                active: state == .active ? endpoints.count : other.count,
                inactive: state == .inactive ? endpoints.count : other.count
            )
            let tabs: HTML = """
                <nav class="tabs" aria-label="Endpoint state"><ul>\
                \(tab("Active", count: counts.active, state: .active, current: state, app: app))\
                \(tab("Inactive", count: counts.inactive, state: .inactive, current: state, app: app))\
                </ul></nav>
                """
            let sorted = endpoints.sorted { ($0.userId, $0.id) < ($1.userId, $1.id) }
            let table: HTML
            if sorted.isEmpty {
                table = "<p>No \(state.rawValue) endpoints.</p>"
            } else if state == .inactive {
                table = ConsoleLayout.table(
                    caption: "Inactive endpoints (the feedback list)",
                    headers: ["User", "Endpoint", "Platform · app ID", "Transport", "Reason", "Inactive since"],
                    rows: sorted.map { endpoint in
                        """
                        <tr><td class="mono">\(endpoint.userId)</td><th scope="row" class="mono">\(endpoint.id)</th>\
                        <td>\(endpoint.platform.rawValue) · <span class="mono">\(endpoint.platformAppId)</span></td>\
                        <td>\(endpoint.transport.rawValue)</td>\
                        <td>\(endpoint.inactiveReason ?? "no reason given")</td>\
                        <td>\(endpoint.inactiveSince.map(ConsoleLayout.time) ?? "—")</td></tr>
                        """
                    })
            } else {
                table = ConsoleLayout.table(
                    caption: "Active endpoints",
                    headers: ["User", "Endpoint", "Platform · app ID", "Transport", "Registered", "Last sync"],
                    rows: sorted.map { endpoint in
                        """
                        <tr><td class="mono">\(endpoint.userId)</td><th scope="row" class="mono">\(endpoint.id)</th>\
                        <td>\(endpoint.platform.rawValue) · <span class="mono">\(endpoint.platformAppId)</span></td>\
                        <td>\(endpoint.transport.rawValue)</td><td>\(ConsoleLayout.time(endpoint.registeredAt))</td>\
                        <td>\(endpoint.lastSyncAt.map(ConsoleLayout.time) ?? "—")</td></tr>
                        """
                    })
            }
            return ConsoleView(
                title: "Endpoints: \(state.rawValue)", section: "endpoints", app: app,
                content: "\(tabs)\n<section>\(table)</section>")
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
