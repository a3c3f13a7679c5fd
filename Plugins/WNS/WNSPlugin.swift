import Foundation
public import HubCore
import Logging

/// The WNS transport as a plugin: `transports.wns` in hub.yaml sets where WNS's token services are
/// and which channel hosts are allowed, each app's `credentials.wns` its package SID and secret
/// (or Entra ID app).
///
/// ```yaml
/// transports:
///   wns: { tokenUrl: "https://127.0.0.1:4444/accesstoken.srf", allowedHosts: ["127.0.0.1:4444"] }
/// apps:
///   - credentials:
///       wns: { packageSid: "ms-app://s-1-15-2-…", clientSecret: env:WNS_SECRET }
/// ```
public struct WNSPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .wns }
    public var platforms: Set<Platform> { [.windows] }
    public var settingKeys: [String] { ["tokenUrl", "entraAuthority", "allowedHosts", "trustRoots", "timeout"] }
    public var credentialKeys: [String] { ["packageSid", "clientSecret", "tenantId", "clientId"] }

    /// Reads `transports.wns` into a ``WNSConfiguration``:
    /// - `tokenUrl`: the classic token endpoint (`https://login.live.com/accesstoken.srf`);
    /// - `entraAuthority`: the Entra ID authority (`https://login.microsoftonline.com`);
    /// - `allowedHosts`: `host` or `host:port` entries allowed as channel hosts besides
    ///   `*.notify.windows.com` (the access token is sent to them: emulators only);
    /// - `trustRoots`: a PEM file of certificates trusted besides the system's;
    /// - `timeout`: one HTTP exchange (15s).
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.expectKeys(settingKeys) else { return nil }
        var configuration = WNSConfiguration()
        if let url = section.url("tokenUrl") { configuration.classicTokenURL = url }
        if let url = section.url("entraAuthority") { configuration.entraAuthority = url }
        if let hosts = section.strings("allowedHosts") {
            configuration.channelPolicy = WNSChannelPolicy(additionalHosts: hosts)
        }
        if let pem = section.fileText("trustRoots") { configuration.trustRootsPEM = [pem] }
        if let timeout = section.duration("timeout") { configuration.requestTimeout = timeout }
        return section.hasErrors ? nil : configuration
    }

    /// Reads one app's `credentials.wns`: `packageSid` and `clientSecret` (the classic Store flow),
    /// or `tenantId`, `clientId` and `clientSecret` (Microsoft Entra ID).
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        let path = section.path
        guard section.expectKeys(credentialKeys) else { return nil }
        if section.has("packageSid") {
            for key in ["tenantId", "clientId"] where section.has(key) {
                section.error(
                    "'\(path)' takes packageSid (classic) or tenantId + clientId (Entra ID), not both", at: key,
                    atKey: true)
            }
            let sid = section.string("packageSid")
            if let sid, let problem = WNSCredentials.packageSIDProblem(sid) { section.error(problem, at: "packageSid") }
            guard section.has("clientSecret") else {
                section.error("'\(path)' is missing 'clientSecret' (the package's client secret, as env:NAME)")
                return nil
            }
            guard let secret = section.secret("clientSecret"), let sid else { return nil }
            return WNSCredentials(authentication: .packageSID(sid: sid, secret: secret))
        }
        guard section.has("tenantId") || section.has("clientId") else {
            section.error("'\(path)' needs packageSid + clientSecret, or tenantId + clientId + clientSecret")
            return nil
        }
        for key in ["tenantId", "clientId", "clientSecret"] where !section.has(key) {
            section.error("'\(path)' is missing '\(key)'")
        }
        let tenant = section.string("tenantId")
        let client = section.string("clientId")
        let secret = section.secret("clientSecret")
        guard let tenant, let client, let secret else { return nil }
        return WNSCredentials(authentication: .entra(tenantID: tenant, clientID: client, clientSecret: secret))
    }

    /// `online`, asks WNS's token service for an access token with the credentials (nothing is sent
    /// to a device); offline there is nothing more to check than reading them did.
    public func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    {
        guard online, let credentials = credentials as? WNSCredentials else { return [] }
        do {
            let client = try WNSClient(configuration: settings as? WNSConfiguration ?? WNSConfiguration())
            var problems: [String] = []
            do {
                try await client.validate(credentials: credentials)
            } catch {
                problems.append("WNS refused the credentials: \(error.message)")
            }
            try? await client.shutdown()
            return problems
        } catch {
            return ["WNS could not be checked: \(error)"]
        }
    }

    /// The transport for the apps with `credentials.wns`; `nil` when none has.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        let apps = apps(in: context)
        guard !apps.isEmpty else { return nil }
        var configuration = context.settings(as: WNSConfiguration.self, default: WNSConfiguration())
        configuration.now = context.now
        if !configuration.channelPolicy.additionalHosts.isEmpty {
            context.logger.warning(
                "wns channel URIs on extra hosts are allowed; use this with emulators only",
                metadata: ["hosts": "\(configuration.channelPolicy.additionalHosts.joined(separator: ","))"])
        }
        context.logger.info("wns transport enabled", metadata: ["apps": "\(apps.map(\.id).joined(separator: ","))"])
        return try WNSTransport(configuration: configuration, logger: context.logger)
    }
}
