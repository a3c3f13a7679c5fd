import HubConfig
import HubCore
import Logging

extension Transports {
    /// The wns transport for the apps that have credentials.wns; `nil` while this build has none.
    static func wns(for file: HubFile, logger: Logger) throws -> (any Transport)? {
        nil
    }
}
