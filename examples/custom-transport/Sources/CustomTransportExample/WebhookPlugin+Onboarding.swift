public import HubTransportKit

extension WebhookPlugin {
    /// What `webhook-hub map-app` asks for an app: its own signing key, as a flag
    /// (`--webhook-secret env:NOTES_WEBHOOK_SECRET`) and as a question of the wizard. The answer is
    /// written as `credentials: { webhook: { secret: env:… } }`, then read back by
    /// ``readCredentials(_:)`` (which refuses a key shorter than 16 bytes) before hub.yaml is saved.
    public var onboarding: TransportOnboarding? {
        TransportOnboarding(
            fields: [
                CredentialField(
                    "secret", prompt: "Webhook signing key (env:NAME or file:path)",
                    help: "The app's own HMAC-SHA256 key for the webhook's signatures, as env:NAME or file:path.",
                    secret: true)
            ],
            credentials: { answers in
                try answers.require("secret")
                return [(key: "secret", value: answers["secret"] ?? "")]
            })
    }
}
