import HubCore
import Yams

extension ConfigReader {
    /// `apps[].webhooks`: `[{url, events: [...], secret: env:…}]`. The URL's address rules and the
    /// secret's format are checked by the webhook plugin when the hub starts (its allow-list is
    /// `transports.webhooks.allowedHosts`); here the shape, the event types, that the secret
    /// resolves, and that no URL is listed twice.
    mutating func readWebhooks(_ node: Node, at path: String) -> [Webhook] {
        guard let items = sequence(node, at: path) else { return [] }
        var webhooks: [Webhook] = []
        for (index, item) in items.enumerated() {
            let here = "\(path)[\(index)]"
            guard
                let entries = mapping(
                    item, at: here, allowed: ["url", "events", "secret"], required: ["url", "events", "secret"])
            else { continue }
            let url = string(entries["url"], at: "\(here).url")
            let secret = secret(entries["secret"], at: "\(here).secret")
            var events: Set<WebhookEventType> = []
            let known = WebhookEventType.known.map(\.rawValue)
            if let list = sequence(entries["events"], at: "\(here).events") {
                if list.isEmpty {
                    error(
                        entries["events"],
                        "'\(here).events' is empty; give one or more of \(known.joined(separator: ", "))")
                }
                for (position, eventNode) in list.enumerated() {
                    guard let name = string(eventNode, at: "\(here).events[\(position)]") else { continue }
                    if known.contains(name) {
                        events.insert(WebhookEventType(rawValue: name))
                    } else {
                        error(
                            eventNode,
                            "'\(here).events[\(position)]' is '\(name)', not an event; use one of \(known.joined(separator: ", "))"
                        )
                    }
                }
            }
            guard let url, let secret else { continue }
            if webhooks.contains(where: { $0.url == url }) {
                error(entries["url"], "'\(here).url' is listed twice in '\(path)'; merge the two entries' events")
                continue
            }
            webhooks.append(Webhook(url: url, events: events, secret: secret))
        }
        return webhooks
    }
}
