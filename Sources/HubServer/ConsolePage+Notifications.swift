import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/notifications?user=…&appNotificationId=…&status=…&from=…&to=…&after=…`:
/// the app's notifications, newest first, filtered by user, publisher ID, state and the time
/// they were published (UTC), 50 a page with a cursor (``Hub/consoleNotifications(app:filter:after:limit:)``,
/// read through an index: a page costs the same with a million notifications as with ten). Each
/// row opens the notification (`/deliveries?user=…&id=…`): its content, receipts and timeline.
extension Console {
    static let notificationsPageSize = 50
    /// The states the filter offers.
    static let notificationStates: [NotificationStatus] = [.scheduled, .active, .expired, .deleted]

    func addNotificationsPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/notifications") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            var query = ConsoleQuery(request)
            var filter = ConsoleNotificationFilter(
                userId: query.identifier("user"), appNotificationId: query.identifier("appNotificationId"),
                from: query.time("from"), to: query.time("to"))
            if let state = query.text("status") {
                if let status = Self.notificationStates.first(where: { $0.rawValue == state }) {
                    filter.status = status
                } else {
                    query.fail(
                        "status", "must be one of \(Self.notificationStates.map(\.rawValue).joined(separator: ", "))")
                }
            }
            if let from = filter.from, let to = filter.to, from >= to {
                query.fail("to", "must be after from")
            }
            let after = query.notificationPosition()
            let form = Self.notificationsForm(app: app, query: query)
            guard query.errors.isEmpty else {
                return ConsoleView(
                    title: "Notifications", section: "notifications", app: app, status: .badRequest,
                    content: "\(query.notice)\n\(form)")
            }
            let page = try await hub.consoleNotifications(
                app: app.id, filter: filter, after: after, limit: Self.notificationsPageSize)
            let rows = page.notifications.map { notification -> HTML in
                let open = ConsoleQuery.link(
                    ConsolePaths.app(app.id, "/deliveries"), [("user", notification.userId), ("id", notification.id)])
                return """
                    <tr><td>\(ConsoleLayout.time(notification.createdDateTime))</td>\
                    <td>\(ConsoleLayout.id(notification.userId))</td>\
                    <th scope="row"><a href="\(open)">\(ConsoleLayout.id(notification.appNotificationId))</a></th>\
                    <td>\(notification.payload.visualContent?.title ?? "—")</td>\
                    <td>\(ConsoleLayout.status(notification.status.rawValue, Self.statusKind(notification.status)))</td>\
                    <td>\(ConsoleLayout.time(notification.expirationDateTime))</td></tr>
                    """
            }
            var list: HTML =
                rows.isEmpty
                ? "<p>No notifications match.</p>"
                : ConsoleLayout.table(
                    caption: "Notifications, newest first",
                    headers: ["Published", "User", "appNotificationId", "Title", "State", "Expires"], rows: rows)
            if page.hasMore, let last = page.notifications.last {
                let next = ConsoleQuery.link(
                    ConsolePaths.app(app.id, "/notifications"),
                    Self.notificationParameters(query) + [("after", ConsoleQuery.cursor(.init(last)))])
                list = "\(list)\n<p class=\"pager\"><a href=\"\(next)\" rel=\"next\">Next page</a></p>"
            }
            if after != nil {
                let first = ConsoleQuery.link(
                    ConsolePaths.app(app.id, "/notifications"), Self.notificationParameters(query))
                list = "\(list)\n<p class=\"pager\"><a href=\"\(first)\">First page</a></p>"
            }
            return ConsoleView(
                title: "Notifications", section: "notifications", app: app,
                content: "\(form)\n<section aria-label=\"Notifications\">\(list)</section>")
        }
    }

    /// The filter's parameters as sent (a next-page link keeps them).
    private static func notificationParameters(_ query: ConsoleQuery) -> [(String, String?)] {
        ["user", "appNotificationId", "status", "from", "to"].map { ($0, query.text($0)) }
    }

    private static func notificationsForm(app: CrossDeviceApp, query: ConsoleQuery) -> HTML {
        let current = query.text("status") ?? ""
        let options = ([""] + notificationStates.map(\.rawValue)).html { value in
            let label = value.isEmpty ? "any" : value
            return value == current
                ? "<option value=\"\(value)\" selected>\(label)</option>"
                : "<option value=\"\(value)\">\(label)</option>"
        }
        func field(_ name: String, _ label: String, type: String = "text") -> HTML {
            """
            <p><label for="\(name)">\(label)</label> <input id="\(name)" name="\(name)" type="\(type)" \
            value="\(query.text(name) ?? "")" autocomplete="off" spellcheck="false"\(query.invalid(name))>\
            \(query.fieldError(name))</p>
            """
        }
        return """
            <form method="get" action="\(ConsolePaths.app(app.id, "/notifications"))" class="inline-form" \
            aria-label="Filter notifications">\
            \(field("user", "User ID"))\(field("appNotificationId", "appNotificationId"))\
            <p><label for="status">State</label> <select id="status" name="status"\(query.invalid("status"))>\
            \(options)</select>\(query.fieldError("status"))</p>\
            \(field("from", "Published from (UTC)", type: "datetime-local"))\
            \(field("to", "Published before (UTC)", type: "datetime-local"))\
            <p><button type="submit">Show</button></p></form>
            """
    }

    static func statusKind(_ status: NotificationStatus) -> String {
        switch status {
        case .active: "ok"
        case .scheduled: "warning"
        default: "off"
        }
    }
}
