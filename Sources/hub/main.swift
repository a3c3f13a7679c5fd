import HubAPNS
import HubCLI
import HubFCM
import HubPolling
import HubUnifiedPush
import HubWNS
import HubWebPush
import HubWebhooks

// `hub`: the command line with the first-party transport plugins. An embedder's executable is the
// same line with its own plugins added (see examples/custom-transport).
await HubCLI.main(plugins: [
    PollingPlugin(), APNSPlugin(), FCMPlugin(), WNSPlugin(), WebPushPlugin(),
    UnifiedPushPlugin(), WebhookPlugin(),
])
