import Foundation
import HubConfig
import HubCore
import HubWNS
import Logging

extension Transports {
    /// The wns transport for the apps that have `credentials.wns`; `nil` when none has.
    ///
    /// Until hub.yaml has a section for transport endpoints, environment variables point the
    /// transport at an emulator (`hub emulate wns` prints them):
    /// - `HUB_WNS_TOKEN_URL`: the classic token endpoint instead of `https://login.live.com/accesstoken.srf`;
    /// - `HUB_WNS_ENTRA_AUTHORITY`: the Entra ID authority instead of `https://login.microsoftonline.com`;
    /// - `HUB_WNS_ALLOWED_HOSTS`: comma-separated `host` or `host:port` entries allowed as channel
    ///   hosts besides `*.notify.windows.com` (the access token is sent to them: emulators only);
    /// - `HUB_WNS_TRUST_ROOTS`: a PEM file of certificates trusted besides the system's.
    static func wns(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        let apps = file.apps.filter { $0.credentials.wns != nil }
        guard !apps.isEmpty else { return nil }
        let configuration = try wnsConfiguration()
        if !configuration.channelPolicy.additionalHosts.isEmpty {
            logger.warning(
                "wns channel URIs on extra hosts are allowed; use this with emulators only",
                metadata: ["hosts": "\(configuration.channelPolicy.additionalHosts.joined(separator: ","))"])
        }
        logger.info("wns transport enabled", metadata: ["apps": "\(apps.map(\.id).joined(separator: ","))"])
        return try WNSTransport(configuration: configuration, logger: logger)
    }
}

extension Transports {
    /// WNS's endpoints, or an emulator's from the `HUB_WNS_*` variables above.
    static func wnsConfiguration() throws -> WNSConfiguration {
        let environment = ProcessInfo.processInfo.environment
        var configuration = WNSConfiguration()
        if let url = environment["HUB_WNS_TOKEN_URL"], !url.isEmpty { configuration.classicTokenURL = url }
        if let url = environment["HUB_WNS_ENTRA_AUTHORITY"], !url.isEmpty { configuration.entraAuthority = url }
        if let hosts = environment["HUB_WNS_ALLOWED_HOSTS"] {
            let entries = hosts.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            configuration.channelPolicy = WNSChannelPolicy(additionalHosts: entries.filter { !$0.isEmpty })
        }
        if let path = environment["HUB_WNS_TRUST_ROOTS"], !path.isEmpty {
            configuration.trustRootsPEM = [try String(contentsOfFile: path, encoding: .utf8)]
        }
        return configuration
    }
}
