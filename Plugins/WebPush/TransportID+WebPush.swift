public import HubCore

extension TransportID {
    /// The Web Push transport: endpoints of the web platform whose token is a `PushSubscription`.
    public static let webpush = TransportID("webpush")
}
