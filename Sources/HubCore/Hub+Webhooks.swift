import Foundation

extension Hub {
    /// How each of the app's webhooks fared over `period` (its latest `failures` failed attempts
    /// included), in hub.yaml's order; a webhook without events yet has zero counts.
    /// - Parameters:
    ///   - appID: the app.
    ///   - period: how far back the delivered and failed counts go (24 hours by default).
    ///   - failures: how many of the latest failures to list per webhook.
    public func webhookSummary(
        app appID: String, period: Duration = .seconds(86_400), failures: Int = 5
    ) async throws -> [(webhook: Webhook, summary: WebhookSummary)] {
        let app = try app(appID)
        guard !app.webhooks.isEmpty else { return [] }
        let since = now().addingTimeInterval(-period.seconds)
        let summaries = try await store.webhookSummary(appId: app.id, since: since, failures: failures)
        return app.webhooks.map { webhook in
            (
                webhook,
                summaries.first { $0.webhook == webhook.id }
                    ?? WebhookSummary(webhook: webhook.id, delivered: 0, failed: 0, pending: 0, lastFailures: [])
            )
        }
    }
}
