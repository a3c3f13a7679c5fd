import HubCore

// The first-party transports' names, for the fixtures of the conformance suites (which depend on
// HubCore only, not on the plugins that declare them).
extension TransportID {
    static let apns = TransportID("apns")
    static let fcm = TransportID("fcm")
    static let wns = TransportID("wns")
    static let polling = TransportID("polling")
}
