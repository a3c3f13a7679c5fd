public import HubCore

/// The transport of devices without push: a delivery wakes the endpoint's waiting long-poll and
/// server-sent-event requests. Nothing leaves the hub.
///
/// The hub wakes polling endpoints itself right after each committed change, without outbox
/// rows; this transport sends the polling deliveries that are in the outbox anyway (queued by an
/// earlier version of the hub, or by a store of your own), waking the endpoint the same way.
///
/// Give it the hub's ``FeedSignals`` (`hub.signals`) so wake-ups reach the HTTP requests:
/// ```swift
/// let signals = FeedSignals()
/// let hub = try Hub(configuration: config, store: store,
///                   transports: [PollingTransport(signals: signals)], signals: signals)
/// ```
public struct PollingTransport: Transport {
    public let id = TransportID.polling
    let signals: FeedSignals

    public init(signals: FeedSignals) { self.signals = signals }

    public func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        let endpoint = delivery.endpoint
        signals.wake(FeedKey(appId: endpoint.appId, userId: endpoint.userId), endpoint: endpoint.id)
        return .accepted
    }
}
