import Logging
import Metrics
import Synchronization

/// How long a client may take and how many connections it may hold: the defence against slow
/// and hoarding clients (slowloris, stalled uploads, idle keep-alives, connection floods).
///
/// `hub.yaml`'s `server.connections` maps onto it. Every connection the server cuts or refuses
/// counts in `hub_connections_cut_total{reason}`; `hub_connections_open` is the number open.
///
/// ```swift
/// var configuration = HubServerConfiguration(cursorKey: key)
/// configuration.connections.headerTimeout = .seconds(5)
/// configuration.connections.maxConnectionsPerClient = 64
/// ```
public struct ConnectionLimits: Sendable, Equatable {
    /// The longest a request head (request line and headers) may take to arrive, from the first
    /// byte of the request, or from the connection's start. `header_timeout` when cut.
    public var headerTimeout: Duration
    /// The longest a request body may take to arrive in full, from the end of its head, however
    /// it trickles in. `body_timeout` when cut.
    public var bodyTimeout: Duration
    /// The longest a keep-alive connection may stay idle between a response and the next
    /// request. Long-polls and event streams are responses in progress, never idle. `idle_timeout`.
    public var idleTimeout: Duration
    /// The most connections open at once; the next ones are answered 503 and closed
    /// (`max_connections`). Keep it below the process's open-file limit.
    public var maxConnections: Int
    /// The most connections open at once from one client IP address (`max_connections_per_client`).
    /// Peers in ``HubServerConfiguration/trustedProxies`` are exempt: they carry many clients.
    public var maxConnectionsPerClient: Int
    /// The most requests handled at once, across all connections; the next ones wait their turn
    /// as parsed heads, and `hub_requests_waiting` counts them. Requests still receiving their
    /// body start at once and are not counted; long-polls and event streams count only until
    /// they wait. It bounds what a burst of requests costs (see `RequestGate`).
    public var maxActiveRequests: Int

    public init(
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60), maxConnections: Int = 10_000, maxConnectionsPerClient: Int = 256,
        maxActiveRequests: Int = 256
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.maxActiveRequests = maxActiveRequests
    }
}

/// Why the server cut or refused a connection: the `reason` label of `hub_connections_cut_total`.
enum ConnectionCut: String, Sendable {
    case headerTimeout = "header_timeout"
    case bodyTimeout = "body_timeout"
    case idleTimeout = "idle_timeout"
    case maxConnections = "max_connections"
    case maxConnectionsPerClient = "max_connections_per_client"

    func count() {
        Counter(label: "hub_connections_cut_total", dimensions: [("reason", rawValue)]).increment()
    }
}

/// The connections open, in total and by client address, shared by every event loop.
final class ConnectionRegistry: Sendable {
    let limits: ConnectionLimits
    private let exempt: Set<String>
    private let logger: Logger
    private let gauge = Gauge(label: "hub_connections_open")

    private struct State {
        var open = 0
        var byClient: [String: Int] = [:]
        /// When a refusal was last logged, so a flood logs once a minute.
        var lastWarning: ContinuousClock.Instant?
        var refusedSinceWarning = 0
    }
    private let state = Mutex(State())

    init(limits: ConnectionLimits, trustedProxies: [String], logger: Logger) {
        self.limits = limits
        self.exempt = Set(trustedProxies)
        self.logger = logger
    }

    /// Counts a new connection from `client` in, or refuses it (counting nothing).
    func open(client: String?) -> ConnectionCut? {
        let (refusal, warning) = state.withLock { state -> (ConnectionCut?, (ConnectionCut, Int)?) in
            var refusal: ConnectionCut?
            if state.open >= limits.maxConnections {
                refusal = .maxConnections
            } else if let client, !exempt.contains(client),
                state.byClient[client, default: 0] >= limits.maxConnectionsPerClient
            {
                refusal = .maxConnectionsPerClient
            }
            guard let refusal else {
                state.open += 1
                if let client { state.byClient[client, default: 0] += 1 }
                gauge.record(state.open)
                return (nil, nil)
            }
            state.refusedSinceWarning += 1
            let now = ContinuousClock.now
            if let last = state.lastWarning, now - last < .seconds(60) { return (refusal, nil) }
            state.lastWarning = now
            defer { state.refusedSinceWarning = 0 }
            return (refusal, (refusal, state.refusedSinceWarning))
        }
        if let (reason, count) = warning {
            let hint =
                reason == .maxConnections
                ? "raise server.connections.max (and the open-file limit) if the load is legitimate"
                : "if this address is a reverse proxy, list it in server.trustedProxies; else raise server.connections.maxPerClient"
            logger.warning(
                "refusing connections: \(reason == .maxConnections ? "too many open" : "too many from one client"); \(hint)",
                metadata: ["client": "\(client ?? "?")", "refused": "\(count)", "reason": "\(reason.rawValue)"])
        }
        refusal?.count()
        return refusal
    }

    /// Counts a connection of `client` out.
    func close(client: String?) {
        state.withLock { state in
            state.open -= 1
            if let client, let count = state.byClient[client] {
                state.byClient[client] = count > 1 ? count - 1 : nil
            }
            gauge.record(state.open)
        }
    }

    /// Connections open now.
    var openCount: Int { state.withLock { $0.open } }
}
