public import HubCore
import HubHTTP2
import HubTransportKit
public import Logging
import Synchronization

/// Delivers hub notifications to iOS, iPadOS, macOS, watchOS and tvOS devices through Apple's
/// HTTP/2 provider API.
///
/// One transport serves every app of the hub: each app's `credentials.apns` (a `.p8` token key or a
/// `.p12` certificate) gets its own connections per environment, and each endpoint is sent to the
/// server of its own `environment`. Shoulder taps become background pushes (`content-available`,
/// priority 5, nothing shown); visible and fallback deliveries become alert pushes with the
/// notification's title and body. Every APNs answer maps to a `DeliveryOutcome`; configuration
/// errors are logged once per credentials and reason, never per delivery.
///
/// ```swift
/// let apns = try APNSTransport(logger: logger)
/// let hub = try Hub(configuration: configuration, store: store, transports: [apns])
/// ```
///
/// Call ``shutdown(grace:)`` when done (or run it as a service): it lets in-flight requests finish and closes the connections.
public final class APNSTransport: Transport {
    public let id: TransportID
    public let configuration: Configuration
    let logger: Logger
    let problems = ProblemLog()
    private let groups = Mutex<[APNSCredentials: Result<APNSCredentialGroup, APNSError>]>([:])
    private let lastGroup = Mutex<(APNSCredentials, APNSCredentialGroup)?>(nil)
    /// Where requests go, per environment; built once, with their `:authority`.
    private let productionOrigin: HTTP2Origin
    private let developmentOrigin: HTTP2Origin

    /// - Parameters:
    ///   - configuration: servers, trust roots, timeouts and limits; Apple's servers by default.
    ///   - id: the transport name endpoints use; `apns` unless a hub runs two of them.
    ///   - logger: where configuration problems, GOAWAYs and connection failures are reported.
    public init(configuration: Configuration = Configuration(), id: TransportID = .apns, logger: Logger) {
        self.configuration = configuration
        self.id = id
        self.logger = logger
        productionOrigin = configuration.production.origin
        developmentOrigin = configuration.development.origin
    }

    /// The origin of the server for `environment` (see ``Configuration/server(for:)``).
    func origin(for environment: APNSEnvironment) -> HTTP2Origin {
        environment == .development ? developmentOrigin : productionOrigin
    }

    /// Sends one hub delivery to its endpoint.
    public func send(_ outbound: OutboundDelivery) async -> DeliveryOutcome {
        await transmit(outbound).outcome
    }

    /// Sends one hub delivery to its endpoint; the reply carries its `apns-id`.
    public func transmit(_ outbound: OutboundDelivery) async -> ProviderReply {
        guard let credentials = outbound.app.credentials.apns else {
            return ProviderReply(
                .suspended(reason: "the app '\(outbound.app.id)' has no credentials.apns; add them to hub.yaml"))
        }
        let request: APNSRequest
        do {
            request = try APNSDeliveryRenderer(configuration: configuration).request(for: outbound)
        } catch {
            return ProviderReply(
                error.code == .invalidDeviceToken
                    ? .endpointGone(since: nil, reason: error.message) : .rejected(reason: error.description))
        }
        return await transmit(request, credentials: credentials)
    }

    /// iOS, iPadOS and the other Apple platforms register as `ios`.
    public var platforms: Set<Platform> { [.ios] }

    /// 512 sends in flight: APNs multiplexes up to 1,000 streams on each HTTP/2 connection, and
    /// the transport sends at the pace its answers come back, so a lane's depth, not the
    /// connections, bounds its rate. With 100 endpoints per user, 512 moved the pipeline from 0.43
    /// to 0.52 of the transport's own rate (docs/benchmarks.md, "Whole path").
    public var preferredConcurrency: Int? { 512 }

    /// `environment`: the APNs environment of the device token.
    public var endpointAttributes: Set<String> { [APNSEnvironment.attribute] }

    /// Gives an endpoint without an `environment` the app's (its credentials'), else production.
    public func prepare(_ endpoint: Endpoint, for app: CrossDeviceApp) -> Endpoint {
        var endpoint = endpoint
        if let environment = endpoint.apnsEnvironment {
            endpoint.apnsEnvironment = APNSEnvironment(rawValue: environment.rawValue.lowercased())
        } else {
            endpoint.apnsEnvironment = app.credentials.apns?.environment ?? .production
        }
        return endpoint
    }

    /// Checks a device's registration: a hex token, a known environment, and an app with APNs credentials.
    public func problem(registering endpoint: Endpoint, for app: CrossDeviceApp) -> String? {
        if let problem = APNSRequest.deviceTokenProblem(endpoint.token ?? "") { return problem }
        if let environment = endpoint.apnsEnvironment, !APNSEnvironment.known.contains(environment) {
            return "the APNs environment must be development or production"
        }
        if app.credentials.apns == nil {
            return "the app '\(app.id)' has no APNs credentials on this hub; register with the polling transport"
        }
        return nil
    }

    /// Checks that `credentials` can be used: the `.p8` parses as an ES256 key, or the `.p12` opens
    /// with its password, and the trust roots load. Run at start-up to fail early.
    public func validate(_ credentials: APNSCredentials) throws(APNSError) {
        _ = try group(for: credentials).get()
    }

    /// Runs until graceful shutdown (after the hub has drained), then closes the connections.
    public func run() async throws {
        await closeAfterGracefulShutdown("APNs", logger: logger, close: { await shutdown() })
    }

    /// Fails sends that wait for a connection, lets in-flight requests finish (up to `grace`), and
    /// closes every connection. Sends after this answer `.retry`.
    public func shutdown(grace: Duration = .seconds(5)) async {
        let clients = groups.withLock { groups in
            groups.values.compactMap { try? $0.get().client }
        }
        await withTaskGroup(of: Void.self) { tasks in
            for client in clients { tasks.addTask { await client.shutdown(grace: grace) } }
        }
    }

    /// The credential group of `credentials`, made on first use; a failure is remembered (and
    /// logged once) so broken credentials are not parsed again for every send.
    func group(for credentials: APNSCredentials) -> Result<APNSCredentialGroup, APNSError> {
        // Most sends use the credentials of the send before: comparing them skips hashing the key.
        if let (last, group) = lastGroup.withLock({ $0 }), last == credentials { return .success(group) }
        let (result, isNew) = groups.withLock { groups in
            if let existing = groups[credentials] { return (existing, false) }
            let made = Result { () throws(APNSError) in
                try APNSCredentialGroup(credentials: credentials, configuration: configuration, logger: logger)
            }
            groups[credentials] = made
            return (made, true)
        }
        if case .success(let group) = result { lastGroup.withLock { $0 = (credentials, group) } }
        if isNew, case .failure(let error) = result {
            logger.error(
                "APNs credentials cannot be used",
                metadata: ["credentials": "\(credentials.kind)", "error": "\(error)"])
        }
        return result
    }
}
