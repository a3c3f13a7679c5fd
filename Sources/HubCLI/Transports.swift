import HubConfig
import HubCore
import Logging

/// Makes the transports `hub serve` runs: one per plugin of the build that has something to do
/// (its ``TransportPlugin/makeTransport(_:)`` returns `nil` otherwise), each from its
/// `transports.<id>` settings, with a logger that names it and the hub's clock.
enum Transports {
    static func make(
        for file: HubFile, plugins: [any TransportPlugin], signals: any FeedChangeListener, clock: any HubClock,
        logger: Logger
    ) throws -> [any Transport] {
        var transports: [any Transport] = []
        for plugin in plugins {
            var transportLogger = logger
            transportLogger[metadataKey: "transport"] = "\(plugin.id)"
            let context = TransportContext(
                settings: file.transports[plugin.id] ?? NoSettings(), apps: file.apps, signals: signals,
                logger: transportLogger, clock: clock)
            if let transport = try plugin.makeTransport(context) { transports.append(transport) }
        }
        return transports
    }
}

/// One info line per transport plugin that is not running, saying why (the running ones log their
/// own "… transport enabled" line).
enum TransportReport {
    static func report(
        apps: [CrossDeviceApp], plugins: [any TransportPlugin], enabled: [TransportID], logger: Logger
    ) {
        for plugin in plugins where !enabled.contains(plugin.id) {
            let platforms = plugin.platforms.map(\.rawValue).sorted().joined(separator: "/")
            let mapping = apps.filter { app in plugin.platforms.contains { app.platforms[$0] != nil } }
            let configured = mapping.filter { $0.credentials[transport: plugin.id] != nil }.map(\.id)
            // The webhook lane serves apps' webhooks, not devices: its own reason. A plugin that takes no
            // credentials (UnifiedPush) is off because hub.yaml does not turn it on.
            let reason =
                plugin.id == .webhooks
                ? "no app has webhooks"
                : !plugin.platforms.isEmpty && mapping.isEmpty
                    ? "no app maps \(platforms)"
                    : plugin.credentialKeys.isEmpty
                        ? "hub.yaml has no transports.\(plugin.id) (an empty one, {}, turns it on)"
                        : configured.isEmpty
                            ? "no app has credentials.\(plugin.id); \(platforms.isEmpty ? "" : platforms + " ")devices register with another transport"
                            : "the plugin made no transport"
            logger.info("\(plugin.id) transport off: \(reason)")
        }
    }
}
