import HubConfig
import HubCore
import HubPolling
import Logging

/// Builds the transports `hub serve` runs. Each provider's part lives in its own file
/// (`Transports+APNS.swift`, …) and returns `nil` when no app has its credentials.
enum Transports {
    static func make(for file: HubFile, signals: FeedSignals, logger: Logger) throws -> [any Transport] {
        var transports: [any Transport] = [PollingTransport(signals: signals)]
        if let apns = try apns(for: file, logger: logger) { transports.append(apns) }
        if let fcm = try fcm(for: file, logger: logger) { transports.append(fcm) }
        if let wns = try wns(for: file, logger: logger) { transports.append(wns) }
        return transports
    }
}
