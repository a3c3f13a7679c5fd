import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/deliveries?user=…&id=…`: one notification (``Hub/deliveryReceipts(app:user:id:)``):
/// its content as stored (title, body, raw content, group, targeting, expiry), its delivery
/// timeline across the user's devices — every event in time order, to the millisecond: enqueued,
/// sent, accepted or failed, synced, read, dismissed — then one row per device with its latest
/// delivery. Without `user` and `id` the page is the form that asks for them; the notifications
/// and failures lists link here.
extension Console {
    func addDeliveriesPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/deliveries") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            let user = request.uri.queryParameters["user"].map(String.init) ?? ""
            let id = request.uri.queryParameters["id"].map(String.init) ?? ""
            let form = Self.deliveriesForm(app: app, user: user, id: id)
            guard !user.isEmpty, !id.isEmpty else {
                return ConsoleView(title: "Delivery timeline", section: "deliveries", app: app, content: form)
            }
            let (notification, receipts) = try await hub.deliveryReceipts(app: app.id, user: user, id: id)
            let summary = Self.content(notification)
            return ConsoleView(
                title: "Delivery timeline", section: "deliveries", app: app,
                content: """
                    \(form)
                    \(summary)
                    \(Self.timeline(notification, receipts))
                    \(Self.devices(receipts))
                    """)
        }
    }

    /// The notification as stored: every value escaped, the raw content as text.
    private static func content(_ notification: UserNotification) -> HTML {
        let visual = notification.payload.visualContent
        let platforms = notification.targetPolicy.platformTypes.map(\.rawValue)
        let raw: HTML = notification.payload.rawContent.map { "<pre class=\"raw\">\($0)</pre>" } ?? "—"
        return """
            <section aria-labelledby="about"><h2 id="about">The notification</h2><dl class="facts">\
            <dt>ID</dt><dd>\(ConsoleLayout.id(notification.id))</dd>\
            <dt>appNotificationId</dt><dd>\(ConsoleLayout.id(notification.appNotificationId))</dd>\
            <dt>User</dt><dd>\(ConsoleLayout.id(notification.userId))</dd>\
            <dt>Status</dt><dd>\(notification.status.rawValue)</dd>\
            <dt>Title</dt><dd>\(visual?.title ?? "—")</dd>\
            <dt>Body</dt><dd>\(visual?.body ?? "—")</dd>\
            <dt>Raw content</dt><dd>\(raw)</dd>\
            <dt>Group</dt><dd>\(notification.groupName ?? "—")</dd>\
            <dt>Targeting</dt><dd>\(platforms.isEmpty ? "every platform" : platforms.joined(separator: ", "))</dd>\
            <dt>Priority</dt><dd>\(notification.priority.rawValue)</dd>\
            <dt>Delivery mode</dt><dd>\(notification.deliveryMode?.rawValue ?? "the app's")</dd>\
            <dt>Published</dt><dd>\(ConsoleLayout.time(notification.createdDateTime, milliseconds: true))</dd>\
            <dt>Scheduled for</dt><dd>\(notification.scheduledDateTime.map { ConsoleLayout.time($0) } ?? "—")</dd>\
            <dt>Expires</dt><dd>\(ConsoleLayout.time(notification.expirationDateTime))</dd></dl></section>
            """
    }

    private static func deliveriesForm(app: CrossDeviceApp, user: String, id: String) -> HTML {
        """
        <form method="get" action="\(ConsolePaths.app(app.id, "/deliveries"))" class="inline-form">\
        <p><label for="user">User ID</label> <input id="user" name="user" value="\(user)" required \
        autocomplete="off" spellcheck="false"></p>\
        <p><label for="id">Notification ID or appNotificationId</label> <input id="id" name="id" value="\(id)" \
        required autocomplete="off" spellcheck="false"></p>\
        <p><button type="submit">Show deliveries</button></p></form>
        """
    }

    /// Every event of every device, oldest first.
    private static func timeline(_ notification: UserNotification, _ receipts: [DeliveryReceipt]) -> HTML {
        struct Event {
            var at: Date
            var device: String
            var text: String
        }
        var events = [Event(at: notification.createdDateTime, device: "hub", text: "published")]
        for receipt in receipts {
            let device = "\(receipt.endpointId) (\(receipt.platform.rawValue), \(receipt.transport.rawValue))"
            for attempt in receipt.earlier + (receipt.latest.map { [$0] } ?? []) {
                let kind = attempt.kind == .shoulderTap ? "tap" : attempt.kind.rawValue
                events.append(Event(at: attempt.enqueuedAt, device: device, text: "\(kind) enqueued"))
                if let sent = attempt.sentAt { events.append(Event(at: sent, device: device, text: "\(kind) sent")) }
                if attempt.attempts > 1, let last = attempt.lastSentAt, last != attempt.sentAt {
                    let after = attempt.retriedAfter.map { " after a retry (\($0))" } ?? ""
                    events.append(
                        Event(at: last, device: device, text: "\(kind) sent again, attempt \(attempt.attempts)\(after)")
                    )
                }
                if let accepted = attempt.acceptedAt {
                    let id = attempt.providerMessageId.map { " — message ID \($0)" } ?? ""
                    events.append(Event(at: accepted, device: device, text: "\(kind) accepted by the provider\(id)"))
                } else if let finished = attempt.finishedAt {
                    let reason = attempt.reason.map { ": \($0)" } ?? ""
                    events.append(
                        Event(at: finished, device: device, text: "\(kind) \(attempt.state.rawValue)\(reason)"))
                } else if attempt.state == .retrying, let next = attempt.nextAttemptAt {
                    let reason = attempt.reason.map { " after \($0)" } ?? ""
                    events.append(
                        Event(
                            at: next, device: device,
                            text: "\(kind) retry due (attempt \(attempt.attempts + 1))\(reason)"))
                }
            }
            if let synced = receipt.lastSyncAt, receipt.syncedSincePublish {
                events.append(Event(at: synced, device: device, text: "synced the feed (latest sync)"))
            }
            if let read = receipt.readAt { events.append(Event(at: read, device: device, text: "marked it read")) }
            if let dismissed = receipt.dismissedAt {
                events.append(Event(at: dismissed, device: device, text: "dismissed it"))
            }
        }
        let items = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.html {
            "<li>\(ConsoleLayout.time($0.element.at, milliseconds: true)) <strong>\($0.element.device)</strong>: \($0.element.text)</li>"
        }
        return """
            <section aria-labelledby="timeline"><h2 id="timeline">Timeline</h2><ol class="timeline">\(items)</ol></section>
            """
    }

    /// One row per device with its latest delivery.
    private static func devices(_ receipts: [DeliveryReceipt]) -> HTML {
        let rows = receipts.map { receipt -> HTML in
            let latest = receipt.latest
            let kind = latest.map { $0.kind == .shoulderTap ? "tap" : $0.kind.rawValue } ?? "—"
            let reason = latest?.reason ?? receipt.reason ?? ""
            return """
                <tr><th scope="row">\(ConsoleLayout.id(receipt.endpointId))</th>\
                <td>\(receipt.platform.rawValue) · \(receipt.transport.rawValue)\
                \(receipt.endpointState == .inactive ? " (inactive)" : "")</td>\
                <td>\(kind)</td><td>\(ConsoleLayout.status(receipt.state.rawValue, Self.statusKind(receipt.state)))</td>\
                <td>\(latest.map { String($0.attempts) } ?? "—")</td><td>\(reason)</td>\
                <td>\(latest?.providerMessageId.map(ConsoleLayout.id) ?? "—")</td>\
                <td>\(latest?.acceptedAt.map(ConsoleLayout.time) ?? "—")</td>\
                <td>\(receipt.lastSyncAt.map(ConsoleLayout.time) ?? "—")</td>\
                <td>\(receipt.readAt.map(ConsoleLayout.time) ?? "—")</td>\
                <td>\(receipt.dismissedAt.map(ConsoleLayout.time) ?? "—")</td></tr>
                """
        }
        guard !rows.isEmpty else { return "<p>The user has no endpoints.</p>" }
        return ConsoleLayout.table(
            caption: "Devices",
            headers: [
                "Endpoint", "Platform · transport", "Kind", "State", "Attempts", "Reason", "Provider message ID",
                "Accepted", "Last sync", "Read", "Dismissed",
            ], rows: rows)
    }

    private static func statusKind(_ state: ReceiptState) -> String {
        switch state {
        case .delivered: "ok"
        case .pending, .retrying, .superseded: "warning"
        case .none: "off"
        default: "error"
        }
    }
}
