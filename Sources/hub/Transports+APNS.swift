import HubConfig
import HubCore
import Logging

extension Transports {
    /// The apns transport for the apps that have credentials.apns; `nil` while this build has none.
    static func apns(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        nil
    }
}
