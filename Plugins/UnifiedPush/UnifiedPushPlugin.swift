import Foundation
public import HubCore
public import HubWebPush

/// How the `unifiedpush` transport reaches distributors.
public struct UnifiedPushConfiguration: Sendable {
    /// The client settings, shared with Web Push: `endpointPolicy` (by default any public https
    /// host, `*`: a user picks their own distributor), `requestTimeout`, `trustRootsPEM`,
    /// `tapTimeToLive`; `declarativeHosts` is always empty (UnifiedPush is not a browser).
    public var webPush: WebPushConfiguration

    /// - Parameter webPush: the client settings; its `declarativeHosts` are ignored.
    public init(webPush: WebPushConfiguration = WebPushConfiguration(endpointPolicy: .init(allowedHosts: ["*"]))) {
        var webPush = webPush
        webPush.declarativeHosts = []
        self.webPush = webPush
    }
}

/// The UnifiedPush transport as a plugin, enabled by a `transports.unifiedpush` section in hub.yaml
/// (an empty one takes the defaults). Apps need no credentials of their own: an app's VAPID key
/// (`credentials.webpush`) signs its pushes when it has one.
///
/// ```yaml
/// transports:
///   unifiedpush: { allowedHosts: ["ntfy.sh", "*.ntfy.contoso.com"] }
/// ```
public struct UnifiedPushPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .unifiedpush }
    public var settingKeys: [String] { ["allowedHosts", "trustRoots", "timeout", "tapTtl"] }

    /// The settings read, and whether hub.yaml has the section (the transport is off without it).
    struct Settings: Sendable {
        var configuration = UnifiedPushConfiguration()
        var enabled = false
    }

    /// Reads `transports.unifiedpush`: the keys of `transports.webpush` that apply to a client
    /// (`allowedHosts`, by default `*`: any public https host; `trustRoots`; `timeout`; `tapTtl`),
    /// read by the Web Push plugin's rules.
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        var settings = Settings(enabled: section.exists)
        guard section.exists else { return settings }
        guard section.expectKeys(settingKeys) else { return nil }
        guard let read = WebPushPlugin().readSettings(section) as? WebPushConfiguration else { return nil }
        var client = read
        if !section.has("allowedHosts") { client.endpointPolicy = WebPushEndpointPolicy(allowedHosts: ["*"]) }
        settings.configuration = UnifiedPushConfiguration(webPush: client)
        return settings
    }

    /// The transport, when hub.yaml has `transports.unifiedpush`; `nil` otherwise.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        var settings = context.settings(as: Settings.self, default: Settings())
        guard settings.enabled else { return nil }
        settings.configuration.webPush.now = context.now
        let hosts = settings.configuration.webPush.endpointPolicy.allowedHosts
        context.logger.info(
            "unifiedpush transport enabled (every platform; endpoints checked at their distributor)",
            metadata: ["allowedHosts": "\(hosts.joined(separator: ","))"])
        return try UnifiedPushTransport(configuration: settings.configuration, logger: context.logger)
    }
}
