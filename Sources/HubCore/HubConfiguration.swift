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
    /// The longest any store call may take before it fails as `unavailable` (a request answers
    /// 503, the dispatcher retries): a database that stops answering never holds the hub.
    public var storeTimeout: Duration
    /// How often the statistics counted in memory are added to the store (``StatisticsStore``):
    /// what a crash loses at most, and how far behind the statistics routes are.
    public var statisticsFlushInterval: Duration = .seconds(5)
    /// How this instance expands broadcasts.
    public var broadcasts = BroadcastConfiguration()
    /// The most endpoints one user of an app may have (hub.yaml `limits.maxEndpointsPerUser`), unless
    /// the app sets its own (``CrossDeviceApp/maxEndpointsPerUser``); `nil`: no limit. Past it a new
    /// endpoint is refused with ``HubError/Code/conflict`` (see ``EndpointLimit``).
    public var maxEndpointsPerUser: Int? = EndpointLimit.defaultMaxPerUser

    public init(
        apps: [CrossDeviceApp],
        defaultLifetime: Duration = .seconds(7 * 86_400),
        maxLifetime: Duration = .seconds(30 * 86_400),
        maxPayloadBytes: Int = 4096,
        retention: Duration = .seconds(7 * 86_400),
        dispatcher: DispatcherConfiguration = DispatcherConfiguration(),
        instanceID: String = "hub-\(UInt32.random(in: .min ... .max))",
        storeTimeout: Duration = .seconds(5)
    ) {
        self.storeTimeout = storeTimeout
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
    /// The most deliveries one claim takes (a lane claims as many as it has free slots, up to this).
    public var batchSize: Int = 256
    /// Sends in flight at once, per transport lane (unless ``laneConcurrency`` names the
    /// transport); `nil`: each transport's ``Transport/preferredConcurrency``, else
    /// ``defaultConcurrency``.
    public var concurrency: Int?
    /// Sends in flight at once for particular transports.
    public var laneConcurrency: [TransportID: Int] = [:]
    /// A lane's sends in flight when neither the configuration nor its transport says.
    public static let defaultConcurrency = 256
    /// How long a claim holds before another instance may take the delivery over. The dispatcher
    /// renews its leases every third of this while the sends are in flight, so after a crash
    /// another instance sends the deliveries about this long later.
    public var lease: Duration = .seconds(10)
    /// Longest sleep of a lane whose queue is empty when nothing wakes it (deliveries that come
    /// due by time: retries, fallbacks, leases of a crashed instance).
    public var idleInterval: Duration = .seconds(1)
    /// Outcomes waiting to be written at which the lanes stop claiming (a store that cannot keep
    /// up); also the most the recorder writes in one call.
    public var maxUnrecordedOutcomes: Int = 8192
    /// The longest pause between retries of a failing store call.
    public var maxStoreBackoff: Duration = .seconds(5)
    /// After graceful shutdown began, how long the dispatcher keeps trying to write the last outcomes.
    public var shutdownFlushTimeout: Duration = .seconds(5)
    /// After graceful shutdown began, how long the lanes wait for sends in flight to return; then
    /// the sends still waiting for their provider are cancelled and retried by the next start. So
    /// shutdown takes at most this plus ``shutdownFlushTimeout``, whatever the lanes hold.
    public var shutdownDrainTimeout: Duration = .seconds(5)
    /// The most of a lane's slots one user's sends may hold (at least one slot): so one user's
    /// sends that hang cannot hold the lane. See `LaneShares` for the app and host shares.
    public var maxUserShare: Double = 0.25
    /// The most of a lane's slots the sends to one destination host may hold (transports that
    /// name hosts: WNS, Web Push).
    public var maxHostShare: Double = 0.5
    /// How much later a delivery over its app's, user's or host's share of a lane is due again
    /// (put back unsent, no attempt counted).
    public var fairnessDeferral: Duration = .seconds(1)
    /// The back-off of a destination host after the first failure to reach it (its name did not
    /// resolve, or connecting failed); it doubles with each failure in a row.
    public var initialHostBackoff: Duration = .seconds(1)
    /// The longest back-off of a destination host that could not be reached.
    public var maxHostBackoff: Duration = .seconds(300)
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

    /// Sends in flight at once for the lane of `transport`, whose own preference is `preferred`:
    /// its entry in ``laneConcurrency``, else ``concurrency``, else `preferred`, else
    /// ``defaultConcurrency``.
    public func concurrency(for transport: TransportID, preferred: Int? = nil) -> Int {
        laneConcurrency[transport] ?? concurrency ?? preferred ?? Self.defaultConcurrency
    }
}

extension Duration {
    /// Seconds as a floating-point number.
    public var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
