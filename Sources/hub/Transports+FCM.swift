import HubConfig
import HubCore
import Logging

extension Transports {
    /// The fcm transport for the apps that have credentials.fcm; `nil` while this build has none.
    static func fcm(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        nil
    }
}
