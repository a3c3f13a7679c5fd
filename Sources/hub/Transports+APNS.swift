import Foundation
import HubAPNS
import HubConfig
import HubCore
import Logging

extension Transports {
    /// The apns transport for the apps that have `credentials.apns`; `nil` when none has.
    ///
    /// Each app's key or certificate and default environment come from hub.yaml; every endpoint
    /// goes to the server of its own environment. Until hub.yaml has a section for transport
    /// endpoints, two environment variables point the transport at an emulator (`hub emulate apns`
    /// prints them):
    /// - `HUB_APNS_SERVER`: `host:port` used for both environments instead of Apple's servers;
    /// - `HUB_APNS_TRUST_ROOTS`: a PEM file of the only certificates trusted (the emulator's CA).
    ///
    /// - Throws: when an app's `.p8` or `.p12` cannot be used, so `hub serve` stops with the reason.
    static func apns(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        let apps = file.apps.filter { $0.credentials.apns != nil }
        guard !apps.isEmpty else { return nil }
        let environment = ProcessInfo.processInfo.environment
        var configuration = APNSTransport.Configuration()
        if let server = environment["HUB_APNS_SERVER"], !server.isEmpty {
            guard let colon = server.lastIndex(of: ":"), let port = Int(server[server.index(after: colon)...]) else {
                throw APNSError(.invalidCredentials, "HUB_APNS_SERVER must be host:port, not '\(server)'")
            }
            let host = String(server[..<colon])
            configuration.production = .init(host: host, port: port)
            configuration.development = .init(host: host, port: port)
        }
        if let path = environment["HUB_APNS_TRUST_ROOTS"], !path.isEmpty {
            configuration.trustRoots = .pemFile(path)
        }
        var transportLogger = logger
        transportLogger[metadataKey: "transport"] = "apns"
        let transport = APNSTransport(configuration: configuration, logger: transportLogger)
        for app in apps {
            guard let credentials = app.credentials.apns else { continue }
            do {
                try transport.validate(credentials)
            } catch {
                throw APNSError(.invalidCredentials, "app '\(app.id)': \(error.message)", underlying: error)
            }
        }
        logger.info(
            "apns transport enabled",
            metadata: [
                "apps": "\(apps.map(\.id).joined(separator: ","))",
                "production": "\(configuration.production)", "development": "\(configuration.development)",
            ])
        return transport
    }
}
