import Foundation
public import HubCore
import Logging

/// The Web Push transport as a plugin: `transports.webpush` in hub.yaml sets which push services
/// subscriptions may name and how long a request may take; each app's `credentials.webpush` its
/// VAPID key and contact.
///
/// ```yaml
/// transports:
///   webpush: { allowedHosts: ["fcm.googleapis.com", "*.push.services.mozilla.com", "*.push.apple.com"] }
/// apps:
///   - platforms: { web: { appIds: ["https://notes.contoso.com"] } }
///     credentials:
///       webpush: { vapidPrivateKey: file:vapid.pem, subject: "mailto:ops@contoso.com" }
/// ```
public struct WebPushPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .webpush }
    public var platforms: Set<Platform> { [.web] }
    public var settingKeys: [String] { ["allowedHosts", "declarativeHosts", "trustRoots", "timeout", "tapTtl"] }
    public var credentialKeys: [String] { ["vapidPrivateKey", "subject"] }

    /// Reads `transports.webpush` into a ``WebPushConfiguration``:
    /// - `allowedHosts`: the push services subscriptions may name, as `host`, `host:port`, `*.domain`
    ///   or `*` for any public https host (``WebPushEndpointPolicy``); by default the browsers' push
    ///   services (``WebPushEndpointPolicy/wellKnownServices``). An exact `host:port` entry also
    ///   allows a loopback emulator (`hub emulate webpush`);
    /// - `declarativeHosts`: the push services whose subscriptions get visible notifications as
    ///   declarative push messages (``DeclarativePushMessage``), entries as in `allowedHosts`; by
    ///   default Apple's (`*.push.apple.com`). A subscription's `declarative` at registration wins;
    /// - `trustRoots`: a PEM file of certificates trusted besides the system's;
    /// - `timeout`: one HTTP exchange (15s);
    /// - `tapTtl`: how long a push service keeps a shoulder tap for an offline browser (1d).
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.expectKeys(settingKeys) else { return nil }
        var configuration = WebPushConfiguration()
        if let hosts = section.strings("allowedHosts") {
            for host in hosts where host.contains("/") || host.contains(" ") {
                section.error(
                    "'\(section.path).allowedHosts' entry '\(host)' must be host, host:port or *.domain",
                    at: "allowedHosts")
            }
            configuration.endpointPolicy = WebPushEndpointPolicy(allowedHosts: hosts)
        }
        if let hosts = section.strings("declarativeHosts") {
            for host in hosts where host.contains("/") || host.contains(" ") {
                section.error(
                    "'\(section.path).declarativeHosts' entry '\(host)' must be host, host:port or *.domain",
                    at: "declarativeHosts")
            }
            configuration.declarativeHosts = hosts
        }
        if let path = section.filePath("trustRoots") {
            do {
                let pem = try String(contentsOfFile: path, encoding: .utf8)
                if !pem.contains("-----BEGIN CERTIFICATE-----") {
                    section.error(
                        "'\(section.path).trustRoots' (\(path)) holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                        at: "trustRoots")
                }
                configuration.trustRootsPEM = [pem]
            } catch {
                section.error("'\(section.path).trustRoots' (\(path)) cannot be read: \(error)", at: "trustRoots")
            }
        }
        if let timeout = section.duration("timeout") { configuration.requestTimeout = timeout }
        if let ttl = section.duration("tapTtl") {
            if ttl > .seconds(28 * 86_400) {
                section.error("'\(section.path).tapTtl' must be at most 28d", at: "tapTtl")
            }
            configuration.tapTimeToLive = ttl
        }
        return section.hasErrors ? nil : configuration
    }

    /// Reads one app's `credentials.webpush`: `vapidPrivateKey` (a secret reference to a P-256 key
    /// as PEM or web-push's base64url scalar) and `subject` (a `mailto:` or `https:` URL).
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        guard section.expectKeys(credentialKeys, required: credentialKeys) else { return nil }
        let secret = section.secret("vapidPrivateKey")
        let subject = section.string("subject")
        if let subject, let problem = VAPIDCredentials.subjectProblem(subject) {
            section.error("'\(section.path).subject' \(problem)", at: "subject")
        }
        var key: VAPIDKey?
        if let secret {
            do {
                key = try VAPIDKey(privateKey: secret.reveal())
            } catch {
                section.error(
                    "'\(section.path).vapidPrivateKey' (\(secret.source)): \(error.message)", at: "vapidPrivateKey")
            }
        }
        guard let key, let subject, !section.hasErrors, let vapid = try? VAPIDCredentials(key: key, subject: subject)
        else { return nil }
        return WebPushCredentials(vapid: vapid)
    }

    /// The key was read and signs (reading it proved that); push services have nothing to ask
    /// without a subscription, so `online` checks nothing more. Reminds of the public key pages need.
    public func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    {
        guard let credentials = credentials as? WebPushCredentials else { return [] }
        do {
            _ = try VAPIDSigner.sign(credentials.vapid, audience: "https://push.example", expires: Date() + 60)
            return []
        } catch {
            return ["the VAPID key in credentials.webpush cannot sign: \(error)"]
        }
    }

    /// The transport for the apps with `credentials.webpush`; `nil` when none has.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        let apps = apps(in: context)
        guard !apps.isEmpty else { return nil }
        var configuration = context.settings(as: WebPushConfiguration.self, default: WebPushConfiguration())
        configuration.now = context.now
        let hosts = configuration.endpointPolicy.allowedHosts
        if hosts.contains("*") {
            context.logger.warning(
                "webpush subscriptions may name any public https host (allowedHosts '*'); list the push services to narrow it"
            )
        }
        context.logger.info(
            "webpush transport enabled",
            metadata: [
                "apps": "\(apps.map(\.id).joined(separator: ","))",
                "vapidKeys":
                    "\(apps.compactMap { $0.credentials.webpush?.vapid.key.publicKeyBase64URL }.joined(separator: ","))",
            ])
        return try WebPushTransport(configuration: configuration, logger: context.logger)
    }
}
