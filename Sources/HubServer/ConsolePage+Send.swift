import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/send`: a test notification for one user, published through
/// ``Hub/publish(app:user:_:)`` with the API's validation. The answer shows the notification's ID
/// and status and the user's endpoints it goes to, or the errors next to their fields.
extension Console {
    /// What the form holds, to show it again after a refused send.
    struct SendFields: Sendable {
        var user = ""
        var title = ""
        var body = ""
        var priority = NotificationPriority.none.rawValue
        var mode = DeliveryMode.visible.rawValue
    }

    func addSendPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/send") { _, context, visit in
            let app = try hub.app(try context.pathParameter("app"))
            return ConsoleView(
                title: "Test send", section: "send", app: app,
                content: sendForm(app, fields: SendFields(), errors: [:], csrfToken: visit.csrfToken))
        }
        form(router, "apps/:app/send") { form, context, visit in
            let app = try hub.app(try context.pathParameter("app"))
            let fields = SendFields(
                user: form["user"] ?? "", title: form["title"] ?? "", body: form["body"] ?? "",
                priority: form["priority"] ?? NotificationPriority.none.rawValue,
                mode: form["mode"] ?? DeliveryMode.visible.rawValue)
            let draft = NotificationDraft(
                appNotificationId: "console-test-" + RandomID.make(),
                priority: NotificationPriority(rawValue: fields.priority),
                payload: NotificationPayload(
                    visualContent: VisualContent(title: fields.title, body: fields.body.isEmpty ? nil : fields.body)),
                deliveryMode: DeliveryMode(rawValue: fields.mode))
            do {
                let (notification, _) = try await hub.publish(app: app.id, user: fields.user, draft)
                context.logger.notice(
                    "console test send", metadata: ["app": "\(app.id)", "notification": "\(notification.id)"])
                let endpoints = try await hub.endpoints(app: app.id, user: fields.user)
                return ConsoleView(
                    title: "Test send", section: "send", app: app,
                    content: """
                        \(sent(notification, endpoints: endpoints))
                        \(sendForm(app, fields: fields, errors: [:], csrfToken: visit.csrfToken))
                        """)
            } catch let error as HubError where error.code == .invalidRequest || error.code == .payloadTooLarge {
                var errors: [String: [String]] = [:]
                for fieldError in error.fieldErrors {
                    errors[Self.formField(fieldError.field), default: []].append(fieldError.message)
                }
                if errors.isEmpty { errors["", default: []].append(error.message) }
                var view = ConsoleView(
                    title: "Test send", section: "send", app: app,
                    content: sendForm(app, fields: fields, errors: errors, csrfToken: visit.csrfToken))
                view.status = .badRequest
                return view
            }
        }
    }

    /// The form field an API field error belongs to; `""` for the form as a whole.
    static func formField(_ field: String) -> String {
        switch field {
        case "userId": "user"
        case "payload.visualContent.title": "title"
        case "payload.visualContent.body": "body"
        case "priority": "priority"
        case "deliveryMode": "mode"
        default: ""
        }
    }

    /// The delivery timeline of `notification`.
    static func deliveriesPath(_ notification: UserNotification) -> String {
        ConsolePaths.app(
            notification.appId,
            "/deliveries?user=\(HTTPText.queryValue(notification.userId))&id=\(HTTPText.queryValue(notification.id))")
    }

    private func sent(_ notification: UserNotification, endpoints: [Endpoint]) -> HTML {
        let active = endpoints.filter { $0.state == .active }
        let devices: HTML =
            active.isEmpty
            ? "<p>The user has no active endpoint: the notification waits in their feed.</p>"
            : """
            <p>Goes to \(active.count) active endpoint(s):</p>
            <ul class="plain">\(active.html { "<li><span class=\"mono\">\($0.id)</span> (\($0.platform.rawValue), \($0.transport.rawValue))</li>" })</ul>
            """
        return ConsoleLayout.notice(
            """
            <h2>Sent</h2>
            <dl class="facts">
            <dt>Notification ID</dt><dd class="mono" id="sent-id">\(notification.id)</dd>
            <dt>appNotificationId</dt><dd class="mono">\(notification.appNotificationId)</dd>
            <dt>User</dt><dd class="mono">\(notification.userId)</dd>
            <dt>Status</dt><dd id="sent-status">\(notification.status.rawValue)</dd>
            </dl>
            \(devices)
            <p><a id="sent-deliveries" href="\(Self.deliveriesPath(notification))">Follow its deliveries</a></p>
            """, kind: "ok")
    }

    private func sendForm(
        _ app: CrossDeviceApp, fields: SendFields, errors: [String: [String]], csrfToken: String
    ) -> HTML {
        func errorText(_ name: String) -> HTML {
            guard let messages = errors[name] else { return .empty }
            return "<p class=\"field-error\" id=\"\(name)-error\">\(messages.joined(separator: "; "))</p>"
        }
        func described(_ name: String, hint: Bool = false) -> HTML {
            let ids = (hint ? ["\(name)-hint"] : []) + (errors[name] == nil ? [] : ["\(name)-error"])
            let invalid: HTML = errors[name] == nil ? .empty : " aria-invalid=\"true\""
            return ids.isEmpty ? invalid : " aria-describedby=\"\(ids.joined(separator: " "))\"\(invalid)"
        }
        func options(_ values: [String], selected: String) -> HTML {
            values.html { value in
                value == selected
                    ? "<option value=\"\(value)\" selected>\(value)</option>"
                    : "<option value=\"\(value)\">\(value)</option>"
            }
        }
        let summary: HTML =
            errors.isEmpty
            ? .empty
            : ConsoleLayout.notice(
                """
                <p>Not sent: \(errors.values.reduce(0) { $0 + $1.count }) problem(s), shown next to the fields.</p>\
                \(errorText(""))
                """, kind: "error", role: "alert")
        return """
            \(summary)
            <form class="stacked" method="post" action="\(ConsolePaths.app(app.id, "/send"))" novalidate>
            <input type="hidden" name="csrf" value="\(csrfToken)">
            <div><label for="user">User ID</label>
            <input id="user" name="user" type="text" value="\(fields.user)" required autocomplete="off" \
            spellcheck="false"\(described("user", hint: true))>
            <p class="hint" id="user-hint">The user's ID as the app's identity provider names it (the token's subject).</p>\
            \(errorText("user"))</div>
            <div><label for="title">Title</label>
            <input id="title" name="title" type="text" value="\(fields.title)" required\(described("title"))>\
            \(errorText("title"))</div>
            <div><label for="body">Body</label>
            <textarea id="body" name="body"\(described("body"))>\(fields.body)</textarea>\(errorText("body"))</div>
            <div><label for="priority">Priority</label>
            <select id="priority" name="priority"\(described("priority"))>\
            \(options(NotificationPriority.known.map(\.rawValue), selected: fields.priority))</select>\
            \(errorText("priority"))</div>
            <div><label for="mode">Delivery mode</label>
            <select id="mode" name="mode"\(described("mode", hint: true))>\
            \(options(DeliveryMode.known.map(\.rawValue), selected: fields.mode))</select>
            <p class="hint" id="mode-hint">visible: the devices show the title and body; shoulderTap: a silent \
            push, the app syncs its feed.</p>\(errorText("mode"))</div>
            <button type="submit">Send test notification</button>
            </form>
            """
    }
}
