public import HubCore

extension TransportID {
    /// The polling transport: devices without push, woken in process.
    public static let polling = TransportID("polling")
}

/// The transport of devices without push: a delivery wakes the endpoint's waiting long-poll and
/// server-sent-event requests. Nothing leaves the hub.
///
/// It declares ``TransportCapabilities/wakesInProcess``: the hub wakes polling endpoints itself
/// right after each committed change, without outbox rows; this transport sends the polling
/// deliveries that are in the outbox anyway (queued by an earlier version of the hub, or by a store
/// of your own), waking the endpoint the same way. It serves every platform and takes no token.
///
/// Give it the hub's waiting room, ``FeedSignals`` (`hub.signals`), so wake-ups reach the HTTP
/// requests waiting there:
/// ```swift
/// let signals = FeedSignals()
/// let hub = try Hub(configuration: config, store: store,
///                   transports: [PollingTransport(signals: signals)], signals: signals)
/// ```
public struct PollingTransport: Transport {
    public let id = TransportID.polling
    let signals: any FeedChangeListener

    /// - Parameter signals: the hub's waiting room (``FeedSignals``), which the wake-ups go to.
    public init(signals: any FeedChangeListener) { self.signals = signals }

    public var capabilities: TransportCapabilities { [.wakesInProcess, .tokenless] }

    public func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        let endpoint = delivery.endpoint
        signals.announce(FeedKey(appId: endpoint.appId, userId: endpoint.userId), .endpoint(endpoint.id))
        return .accepted
    }
}

/// The polling transport as a plugin: always on, for every platform; hub.yaml has nothing to set
/// for it (`transports.polling` takes no keys, apps no `credentials.polling`).
public struct PollingPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .polling }
    public var capabilities: TransportCapabilities { [.wakesInProcess, .tokenless] }

    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        context.logger.info("polling transport enabled (long-poll and server-sent events, for every platform)")
        return PollingTransport(signals: context.signals)
    }
}

extension Hub {
    /// The hub's waiting room (its ``Hub/signals``, when they are a ``FeedSignals``): where
    /// long-polls and event streams wait. `nil` for a hub that announces its changes elsewhere.
    public var waitingRoom: FeedSignals? { signals as? FeedSignals }
}
