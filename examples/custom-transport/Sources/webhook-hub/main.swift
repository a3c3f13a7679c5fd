import CustomTransportExample
import HubAPNS
import HubCLI
import HubFCM
import HubPolling
import HubUnifiedPush
import HubWNS
import HubWebPush
import HubWebhooks

// `webhook-hub`: the hub's command line with the first-party plugins (as the hub's own `hub` lists
// them) and the webhook transport of this package. `webhook-hub serve`, `config check` and
// `map-app` read `transports.webhook` and `credentials.webhook` from hub.yaml like any other
// transport's.
await HubCLI.main(plugins: [
    PollingPlugin(), APNSPlugin(), FCMPlugin(), WNSPlugin(), WebPushPlugin(), UnifiedPushPlugin(),
    HubWebhooks.WebhookPlugin(), CustomTransportExample.WebhookPlugin(),
])
