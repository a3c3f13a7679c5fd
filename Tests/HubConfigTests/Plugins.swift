import HubAPNS
import HubCore
import HubFCM
import HubPolling
import HubWNS

/// The plugins of `hub`: each reads its own `transports.<id>` and `credentials.<id>`.
let firstPartyPlugins: [any TransportPlugin] = [PollingPlugin(), APNSPlugin(), FCMPlugin(), WNSPlugin()]
