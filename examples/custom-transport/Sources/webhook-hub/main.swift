import CustomTransportExample
import HubAPNS
import HubCLI
import HubFCM
import HubPolling
import HubWNS

// `webhook-hub`: the `hub` command line with the webhook transport added to the first-party plugins.
// `webhook-hub serve`, `config check` and `map-app` read `transports.webhook` and
// `credentials.webhook` from hub.yaml like any other transport's.
await HubCLI.main(plugins: [PollingPlugin(), APNSPlugin(), FCMPlugin(), WNSPlugin(), WebhookPlugin()])
