public import HubCore
import HubEmulatorKit

extension WebhookPlugin {
    /// `hub emulate webhook`, a receiver on 127.0.0.1 that verifies signatures. `hub map-app` asks
    /// nothing for the webhook lane: it takes no credentials (each webhook's signing secret is part
    /// of the app's `webhooks` entry in hub.yaml, with its URL and events), and
    /// `transports.webhooks` is the hub's, not an app's.
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(emulator: .command(WebhookEmulatorCommand.self, name: "webhook"))
    }
}
