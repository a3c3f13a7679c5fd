import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/webhooks`: per webhook of the app, its events over the last 24 hours
/// (delivered, failed for good, the success rate), what is queued, and its latest failures.
extension Console {
    func addWebhooksPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/webhooks") { _, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            let summaries = try await hub.webhookSummary(app: app.id)
            let content: HTML
            if summaries.isEmpty {
                content = "<p>This app has no webhooks. Give it apps[].webhooks in hub.yaml (docs/webhooks.md).</p>"
            } else {
                content = ConsoleLayout.table(
                    caption: "Webhooks, last 24 hours",
                    headers: ["Webhook", "Events", "Delivered", "Failed", "Success rate", "Queued", "Latest failures"],
                    rows: summaries.map { webhookRow($0.webhook, $0.summary) })
            }
            return ConsoleView(
                title: "Webhooks", section: "webhooks", app: app, content: "<section>\(content)</section>")
        }
    }

    private func webhookRow(_ webhook: Webhook, _ summary: WebhookSummary) -> HTML {
        let rate = summary.successRate.map { String(format: "%.1f %%", $0 * 100) } ?? "–"
        let kind = summary.successRate.map { $0 >= 0.99 ? "ok" : $0 >= 0.9 ? "warning" : "error" } ?? "off"
        let failures: HTML =
            summary.lastFailures.isEmpty
            ? "none"
            : "<ul>\(HTML.joined(summary.lastFailures.map { "<li>\(ConsoleLayout.time($0.at)) \($0.error)</li>" as HTML }))</ul>"
        return """
            <tr><th scope="row"><span class="mono">\(webhook.id)</span><br>\(webhook.url)</th>\
            <td>\(webhook.events.map(\.rawValue).sorted().joined(separator: ", "))</td>\
            <td>\(summary.delivered)</td><td>\(summary.failed)</td>\
            <td>\(ConsoleLayout.status(rate, kind))</td><td>\(summary.pending)</td><td>\(failures)</td></tr>
            """
    }
}
