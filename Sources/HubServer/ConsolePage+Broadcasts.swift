import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/broadcasts`: the app's latest broadcasts with their progress, and a
/// button that cancels an open one (a form, no script).
extension Console {
    func addBroadcastsPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/broadcasts") { _, context, visit in
            let app = try hub.app(try context.pathParameter("app"))
            return try await broadcastsView(app, notice: nil, csrfToken: visit.csrfToken)
        }
        form(router, "apps/:app/broadcasts/:id/cancel") { _, context, visit in
            let app = try hub.app(try context.pathParameter("app"))
            let id = try context.pathParameter("id")
            let notice: HTML
            do {
                let cancelled = try await hub.cancelBroadcast(app: app.id, id: id)
                context.logger.notice(
                    "console cancelled a broadcast", metadata: ["app": "\(app.id)", "broadcast": "\(id)"])
                notice = ConsoleLayout.notice(
                    "<p>Broadcast <span class=\"mono\">\(id)</span> cancelled after \(cancelled.published) users.</p>",
                    kind: "ok")
            } catch let error as HubError where error.code == .conflict {
                notice = ConsoleLayout.notice("<p>\(error.message)</p>", kind: "error", role: "alert")
            }
            return try await broadcastsView(app, notice: notice, csrfToken: visit.csrfToken)
        }
    }

    private func broadcastsView(_ app: CrossDeviceApp, notice: HTML?, csrfToken: String) async throws -> ConsoleView {
        let broadcasts = try await hub.broadcasts(app: app.id, limit: 50)
        let content: HTML
        if broadcasts.isEmpty {
            content = "<p>No broadcasts yet. An app server creates them with POST /v1/apps/{app}/broadcasts.</p>"
        } else {
            content = ConsoleLayout.table(
                caption: "Latest broadcasts, newest first",
                headers: ["Broadcast", "Audience", "Status", "Progress", "Created", ""],
                rows: broadcasts.map { row($0, app: app, csrfToken: csrfToken) })
        }
        return ConsoleView(
            title: "Broadcasts", section: "broadcasts", app: app,
            content: "\(notice ?? .empty)<section>\(content)</section>")
    }

    private func row(_ broadcast: Broadcast, app: CrossDeviceApp, csrfToken: String) -> HTML {
        let audience: String
        switch broadcast.audience {
        case .allUsers: audience = "all users"
        case .users(let count): audience = "\(count) listed users"
        case .tags(let anyOf, let allOf):
            let parts = [("any of ", anyOf), ("all of ", allOf)].filter { !$0.1.isEmpty }
            audience = parts.map { $0.0 + $0.1.joined(separator: ", ") }.joined(separator: "; ")
        }
        let done = broadcast.published + broadcast.failed
        let progress: HTML
        if let size = broadcast.audienceSize {
            progress =
                "<progress max=\"\(max(size, 1))\" value=\"\(done)\">\(done) of \(size)</progress> \(done) of \(size)"
        } else {
            progress = "\(done) so far"
        }
        let counts: HTML = "\(broadcast.published) published, \(broadcast.failed) failed"
        let kind =
            switch broadcast.status {
            case .done: "ok"
            case .cancelled: "off"
            default: "warning"
            }
        let action: HTML
        if broadcast.status.isOpen {
            let path = ConsolePaths.app(app.id, "/broadcasts/\(HTTPText.pathSegment(broadcast.id))/cancel")
            action = """
                <form method="post" action="\(path)"><input type="hidden" name="csrf" value="\(csrfToken)">\
                <button type="submit">Cancel</button></form>
                """
        } else {
            action = .empty
        }
        return """
            <tr><th scope="row" class="mono">\(broadcast.id)<br><span class="mono">\(broadcast.draft.appNotificationId)</span></th>\
            <td>\(audience)</td><td>\(ConsoleLayout.status(broadcast.status.rawValue, kind))</td>\
            <td>\(progress)<br>\(counts)</td><td>\(ConsoleLayout.time(broadcast.createdDateTime))</td><td>\(action)</td></tr>
            """
    }
}
