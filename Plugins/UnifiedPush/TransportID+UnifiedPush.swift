public import HubCore

extension TransportID {
    /// The UnifiedPush transport: endpoints of any platform whose token is a UnifiedPush
    /// distributor's endpoint with its Web Push keys.
    public static let unifiedpush = TransportID("unifiedpush")
}
