import HubCore

// HubCore's tests name push transports without depending on their plugins (polling comes from
// HubPolling, which they use).
extension TransportID {
    static let apns = TransportID("apns")
    static let fcm = TransportID("fcm")
    static let wns = TransportID("wns")
}
