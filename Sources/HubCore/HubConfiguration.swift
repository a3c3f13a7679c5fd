/// Everything an embedder sets to run a ``Hub``; `HubConfig` maps hub.yaml onto it.
public struct HubConfiguration: Sendable {
    public var apps: [CrossDeviceApp]
    /// Lifetime of a notification published without `expirationDateTime`.
    public var defaultLifetime: Duration
    /// The furthest `expirationDateTime` may lie ahead (Graph: 30 days).
    public var maxLifetime: Duration
    /// Largest encoded `payload` accepted by publish, in bytes.
    public var maxPayloadBytes: Int
    /// How long expired and deleted notifications stay in feeds as tombstones.
    public var retention: Duration
    public var dispatcher: DispatcherConfiguration
    /// Names this hub instance in delivery leases (several instances share one database).
    public var instanceID: String

    public init(
        apps: [CrossDeviceApp],
        defaultLifetime: Duration = .seconds(7 * 86_400),
        maxLifetime: Duration = .seconds(30 * 86_400),
        maxPayloadBytes: Int = 4096,
        retention: Duration = .seconds(7 * 86_400),
        dispatcher: DispatcherConfiguration = DispatcherConfiguration(),
        instanceID: String = "hub-\(UInt32.random(in: .min ... .max))"
    ) {
        self.apps = apps
        self.defaultLifetime = defaultLifetime
        self.maxLifetime = maxLifetime
        self.maxPayloadBytes = maxPayloadBytes
        self.retention = retention
        self.dispatcher = dispatcher
        self.instanceID = instanceID
    }
}

/// How the dispatcher works the outbox.
public struct DispatcherConfiguration: Sendable {
    /// Whether this instance sends deliveries. An API-only instance (`hub serve --no-dispatch`)
    /// still enqueues them; another instance on the same store sends them.
    public var enabled: Bool = true
    /// Deliveries claimed per round.
    public var batchSize: Int = 256
    /// Sends in flight at once.
    public var concurrency: Int = 64
    /// How long a claim holds before another instance may take the delivery over.
    public var lease: Duration = .seconds(60)
    /// Longest sleep between outbox checks when nothing wakes the dispatcher.
    public var idleInterval: Duration = .seconds(1)
    /// First retry delay; doubles per attempt (with ±20 % jitter) up to `maxBackoff`.
    public var initialBackoff: Duration = .seconds(1)
    public var maxBackoff: Duration = .seconds(3600)
    /// Attempts before a delivery is given up.
    public var maxAttempts: Int = 12
    /// Age after which a delivery is given up, whatever its attempts.
    public var maxAge: Duration = .seconds(86_400)
    /// How often expired notifications are swept.
    public var sweepInterval: Duration = .seconds(30)

    public init() {}
}

extension Duration {
    /// Seconds as a floating-point number.
    public var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
