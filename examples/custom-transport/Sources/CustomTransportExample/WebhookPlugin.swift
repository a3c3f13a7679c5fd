import Foundation
public import HubTransportKit

/// The webhook transport as a plugin: what makes it part of `hub serve`, `hub config check` and
/// `hub map-app` in an executable built on HubCLI (`webhook-hub`, beside this file).
///
/// ```yaml
/// transports:
///   webhook: { url: "https://relay.contoso.com/hub-taps", secret: env:WEBHOOK_SECRET, timeout: 10s }
/// apps:
///   - id: notes.contoso.com
///     credentials:
///       webhook: { secret: env:NOTES_WEBHOOK_SECRET }   # optional: this app's own signing key
/// ```
///
/// Without a `transports.webhook` section the transport is off (`hub serve` says so in its log).
public struct WebhookPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { WebhookTransport.transportID }
    /// Every platform: the receiver decides how to reach the device.
    public var platforms: Set<Platform> { [] }
    public var settingKeys: [String] { ["url", "secret", "timeout"] }
    public var credentialKeys: [String] { ["secret"] }

    /// What `transports.webhook` configures: `nil` when hub.yaml has no such section.
    public struct Settings: Sendable {
        public var configuration: WebhookTransport.Configuration?
    }

    /// Reads `transports.webhook`: `url` (http or https) and `secret` (`env:NAME` or `file:path`)
    /// are required, `timeout` is 10s unless given.
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.exists else { return Settings(configuration: nil) }
        guard section.expectKeys(settingKeys, required: ["url", "secret"]) else { return nil }
        let url = section.url("url")
        let secret = section.secret("secret", inline: false)
        let timeout = section.duration("timeout") ?? .seconds(10)
        guard let url, let parsed = URL(string: url), let secret else { return nil }
        return Settings(configuration: .init(url: parsed, secret: secret, timeout: timeout))
    }

    /// Reads an app's `credentials.webhook`: its own `secret`.
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        guard section.expectKeys(credentialKeys, required: ["secret"]),
            let secret = section.secret("secret", inline: false)
        else { return nil }
        if secret.revealBytes().count < 16 {
            section.error(
                "'\(section.path).secret' (\(secret.source)) is shorter than 16 bytes; use a random key", at: "secret")
            return nil
        }
        return WebhookCredentials(secret: secret)
    }

    /// The transport, when hub.yaml configures one.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        guard let configuration = context.settings(as: Settings.self, default: Settings()).configuration else {
            return nil
        }
        context.logger.info("webhook transport enabled", metadata: ["url": "\(configuration.url)"])
        var timed = configuration
        timed.now = context.now  // the hub's clock
        return WebhookTransport(configuration: timed)
    }
}

/// An app's own webhook signing key (`credentials.webhook`).
public struct WebhookCredentials: TransportCredentials {
    public static let transport = WebhookTransport.transportID
    public var secret: Secret
    public init(secret: Secret) { self.secret = secret }
    public var summary: String { "signing key from \(secret.source)" }
}

extension PushCredentials {
    /// The app's `credentials.webhook`.
    public var webhook: WebhookCredentials? {
        get { self[WebhookCredentials.self] }
        set { self[WebhookCredentials.self] = newValue }
    }
}
