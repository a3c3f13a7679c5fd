import HubCore

// The store tests name a push transport without depending on its plugin.
extension TransportID {
    static let apns = TransportID("apns")
}
