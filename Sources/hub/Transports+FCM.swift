import Foundation
import HubConfig
import HubCore
import HubFCM
import Logging

extension Transports {
    /// The fcm transport for the apps that have `credentials.fcm`; `nil` when none has.
    ///
    /// Each app's service account (its `token_uri` included) comes from hub.yaml. Until hub.yaml has
    /// a section for transport endpoints, two environment variables point the transport at an
    /// emulator (`hub emulate fcm` prints them):
    /// - `HUB_FCM_SEND_URL`: the send base URL instead of `https://fcm.googleapis.com`;
    /// - `HUB_FCM_TRUST_ROOTS`: a PEM file of certificates trusted besides the system's.
    static func fcm(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        let apps = file.apps.filter { $0.credentials.fcm != nil }
        guard !apps.isEmpty else { return nil }
        let configuration = try fcmConfiguration()
        logger.info(
            "fcm transport enabled",
            metadata: ["apps": "\(apps.map(\.id).joined(separator: ","))", "sendURL": "\(configuration.sendBaseURL)"])
        return try FCMTransport(configuration: configuration, logger: logger)
    }
}

extension Transports {
    /// FCM's endpoints, or an emulator's from `HUB_FCM_SEND_URL` and `HUB_FCM_TRUST_ROOTS`.
    static func fcmConfiguration() throws -> FCMConfiguration {
        let environment = ProcessInfo.processInfo.environment
        var configuration = FCMConfiguration()
        if let url = environment["HUB_FCM_SEND_URL"], !url.isEmpty { configuration.sendBaseURL = url }
        if let path = environment["HUB_FCM_TRUST_ROOTS"], !path.isEmpty {
            configuration.trustRootsPEM = [try String(contentsOfFile: path, encoding: .utf8)]
        }
        return configuration
    }
}
