public import HubCore
import Synchronization

/// A transport for tests: records every delivery it is given and answers with a scripted outcome.
///
/// ```swift
/// let transport = RecordingTransport(id: TransportID("apns"), platforms: [.ios]) { delivery in
///     delivery.endpoint.token == "dead" ? .endpointGone(since: nil, reason: "Unregistered") : .accepted
/// }
/// ```
public final class RecordingTransport: Transport {
    public let id: TransportID
    public let platforms: Set<Platform>
    public let capabilities: TransportCapabilities
    public let endpointAttributes: Set<String>
    public let preferredConcurrency: Int?
    private let script: @Sendable (OutboundDelivery) async -> DeliveryOutcome
    private let log = Mutex<[OutboundDelivery]>([])
    private let registrationProblem: (@Sendable (Endpoint) -> String?)?

    /// - Parameters:
    ///   - platforms: the platforms it serves; every platform by default.
    ///   - capabilities: what it declares; nothing by default.
    ///   - endpointAttributes: the endpoint attributes it accepts; none by default.
    ///   - preferredConcurrency: its lane's depth unless the configuration says; the hub's by default.
    ///   - registrationProblem: what ``problem(registering:for:)`` answers; nothing by default.
    ///   - script: the outcome of each send; `.accepted` by default.
    public init(
        id: TransportID, platforms: Set<Platform> = [], capabilities: TransportCapabilities = [],
        endpointAttributes: Set<String> = [], preferredConcurrency: Int? = nil,
        script: @escaping @Sendable (OutboundDelivery) async -> DeliveryOutcome = { _ in .accepted },
        registrationProblem: (@Sendable (Endpoint) -> String?)? = nil
    ) {
        self.id = id
        self.platforms = platforms
        self.capabilities = capabilities
        self.endpointAttributes = endpointAttributes
        self.preferredConcurrency = preferredConcurrency
        self.script = script
        self.registrationProblem = registrationProblem
    }

    public func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        log.withLock { $0.append(delivery) }
        return await script(delivery)
    }

    /// ``send(_:)``, with a provider message ID as a provider would give one:
    /// ``messageID(of:)`` of the delivery.
    public func transmit(_ delivery: OutboundDelivery) async -> ProviderReply {
        ProviderReply(await send(delivery), messageId: Self.messageID(of: delivery))
    }

    /// The message ID ``transmit(_:)`` answers for `delivery`: the transport, the delivery's ID and
    /// its attempt (`apns-123-1`).
    public static func messageID(of delivery: OutboundDelivery) -> String {
        "\(delivery.endpoint.transport)-\(delivery.delivery.id)-\(delivery.delivery.attempts)"
    }

    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        registrationProblem?(endpoint)
    }

    /// Every delivery sent so far, in order.
    public var deliveries: [OutboundDelivery] { log.withLock { $0 } }

    /// The deliveries sent to one endpoint.
    public func deliveries(to endpointID: String) -> [OutboundDelivery] {
        deliveries.filter { $0.endpoint.id == endpointID }
    }

    public func reset() { log.withLock { $0.removeAll() } }
}
