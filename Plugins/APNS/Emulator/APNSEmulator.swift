import HubCore
public import HubEmulatorKit
public import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

public import struct Foundation.Date

/// A local APNs: Apple's HTTP/2 provider API over TLS on 127.0.0.1, enforcing what Apple enforces.
///
/// What it checks, in this order (PROVIDERS.md §1.2–§1.6, §1.10), answering with Apple's status and
/// `{"reason": …}` body (plus `timestamp` in ms for 410):
/// 1. `:method` POST (405 `MethodNotAllowed`); `:path` `/3/device/<token>` (404 `BadPath`), token
///    present (400 `MissingDeviceToken`) and hex of whole bytes, any length (400 `BadDeviceToken`).
/// 2. No header repeated (400 `DuplicateHeaders`); `apns-id` a lowercase UUID (400 `BadMessageId`).
/// 3. `apns-push-type` present and one of Apple's eleven (400 `InvalidPushType`; Apple only
///    recommends it, the emulator requires it); `apns-priority` 1, 5 or 10 and 5 for background
///    pushes, where the default 10 counts (400 `BadPriority`); `apns-expiration` whole seconds from 0
///    to 31 days ahead (400 `BadExpirationDate`); `apns-collapse-id` ≤ 64 bytes (400 `BadCollapseId`).
/// 4. Authentication. Token: `authorization: bearer <jwt>` (403 `MissingProviderToken`), ES256
///    with a registered `kid` whose team is `iss` and whose signature verifies against the key's
///    public half (403 `InvalidProviderToken`), `iat` (number or numeric string) not older than an
///    hour (403 `ExpiredProviderToken`) nor more than 5 minutes ahead (403 `InvalidProviderToken`), a
///    key for this environment (403 `BadEnvironmentKeyIdInToken`); the first valid token pins its
///    team (403 `InvalidProviderToken` for another) and key (403 `UnrelatedKeyIdInToken`) to the
///    connection, and a new token less than 20 minutes after the last change on the connection is
///    429 `TooManyProviderTokenUpdates`. Certificate: a client certificate chained to
///    ``Configuration/clientCertificateTrustRootsPEM``; its subject UID is the bundle ID.
/// 5. `apns-topic`: present (400 `MissingTopic`, except a certificate's own bundle ID is the
///    default), well formed and with the suffix its push type needs (400 `BadTopic`), a bundle ID
///    registered for the key's team or the certificate (400 `TopicDisallowed`).
/// 6. The device: marked unregistered → 410 `Unregistered` with its timestamp; registered for the
///    other environment → 400 `BadDeviceToken`; for another bundle ID → 400 `DeviceTokenNotForTopic`.
/// 7. The body: not empty (400 `PayloadEmpty`), ≤ 4096 bytes or 5120 for VoIP (413
///    `PayloadTooLarge`), a JSON object whose `aps` keys have Apple's types, a background push with
///    only `content-available: 1`, an alert push that shows something — else 400 `BadPayload`, a
///    reason of the emulator's own (Apple documents none for malformed JSON).
///
/// Connections start at `SETTINGS_MAX_CONCURRENT_STREAMS` 1 and get
/// ``Configuration/maxConcurrentStreams`` after their first valid request, as Apple's do. The
/// development emulator adds `apns-unique-id` to 200 answers. Knobs (see `APNSEmulator+Knobs.swift`)
/// script dead tokens, throttling, 5xx, held answers, resets, GOAWAY, lower stream limits and stalls.
///
/// ```swift
/// let emulator = try await APNSEmulator.start()
/// let key = APNSTestKey()
/// emulator.register(key, bundleIDs: ["com.contoso.notes"])
/// // APNSTransport.Configuration(productionHost: "127.0.0.1", developmentHost: "127.0.0.1",
/// //     port: emulator.port, trustRoots: .pem(emulator.trustRootPEM))
/// ```
public final class APNSEmulator: Sendable {
    /// How the emulator runs.
    public struct Configuration: Sendable {
        /// Which APNs environment this emulator is; tokens registered for the other one fail.
        public var environment: APNSEnvironment = .production
        /// The stream limit a connection gets after its first valid request.
        public var maxConcurrentStreams: Int = 1000
        /// The stream limit a connection starts with.
        public var initialMaxConcurrentStreams: Int = 1
        /// Keep every request for ``requests``; turn off for benchmarks (counters still count).
        public var recordsRequests: Bool = true
        /// CA certificates (PEM) client certificates must chain to; empty = token auth only.
        public var clientCertificateTrustRootsPEM: [String] = []
        public var host: String = "127.0.0.1"
        /// `0` lets the system choose; read ``port`` afterwards.
        public var port: Int = 0
        /// The emulator's clock, for `iat` ages, token-update spacing and expirations.
        public var now: @Sendable () -> Date = { Date() }
        /// Called for every answered request (after recording), for logs of `hub emulate apns`.
        public var onRequest: (@Sendable (Request) -> Void)?
        /// Called for every request answered with another status than 200 (after recording); cheaper
        /// than ``onRequest`` for callers that only want the refusals, such as `hub-bench apns`.
        public var onRefusal: (@Sendable (Request) -> Void)?
        /// The event loops that serve connections; `nil` means NIO's shared singleton group.
        /// `hub-bench apns` gives the emulator loops of its own, as APNs is a server of its own:
        /// sharing the round-robin of the client's group piles connections onto one thread.
        public var eventLoopGroup: (any EventLoopGroup)?
        public init() {}
    }

    public let configuration: Configuration
    /// The port it listens on.
    public let port: Int
    /// The authority that issued the server certificate.
    public let certificateAuthority: TestCertificateAuthority
    /// The CA certificate (PEM) a client must trust.
    public var trustRootPEM: String { certificateAuthority.certificatePEM }

    let state: Mutex<APNSEmulatorState>
    private let listener: any Channel

    private init(
        configuration: Configuration, port: Int, authority: TestCertificateAuthority, listener: any Channel
    ) {
        self.configuration = configuration
        self.port = port
        self.certificateAuthority = authority
        self.state = Mutex(APNSEmulatorState(configuration: configuration))
        self.listener = listener
    }

    /// Starts an emulator with a server certificate for `localhost`, `127.0.0.1` and Apple's host names.
    ///
    /// - Parameters:
    ///   - configuration: how the emulator answers (the default: as APNs does).
    ///   - authority: the CA that issues the server certificate; a new one by default.
    /// - Throws: when the certificate, TLS settings or socket cannot be set up.
    public static func start(
        _ configuration: Configuration = Configuration(), authority: TestCertificateAuthority? = nil
    ) async throws -> APNSEmulator {
        let authority = try authority ?? TestCertificateAuthority(commonName: "APNs emulator CA")
        let certificate = try authority.issue(
            dnsNames: ["localhost", "api.push.apple.com", "api.sandbox.push.apple.com"], ipAddresses: ["127.0.0.1"])
        var tls = try certificate.serverTLSConfiguration(alpn: ["h2"])
        // Closing does not wait for the client's close_notify: a reset is abrupt, as a real one is.
        tls.shutdownTimeout = .zero
        if !configuration.clientCertificateTrustRootsPEM.isEmpty {
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates(
                try configuration.clientCertificateTrustRootsPEM.flatMap {
                    try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
                })
        }
        let context = try NIOSSLContext(configuration: tls)
        let box = EmulatorBox()
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard let emulator = box.emulator else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try emulator.configure(channel, tls: context)
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw TestCertificateError("the APNs emulator's socket has no port")
        }
        let emulator = APNSEmulator(
            configuration: configuration, port: port, authority: authority, listener: listener)
        box.emulator = emulator
        return emulator
    }

    /// Sets up one accepted connection: TLS, HTTP/2 at one stream, one handler for its requests.
    private func configure(_ channel: any Channel, tls: NIOSSLContext) throws {
        let connection: APNSEmulatorConnection? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            state.nextConnectionID += 1
            let connection = APNSEmulatorConnection(id: state.nextConnectionID, channel: channel)
            state.connections[connection.id] = connection
            state.connectionsAccepted += 1
            return connection
        }
        guard let connection else { throw ChannelError.ioOnClosedChannel }
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(NIOSSLServerHandler(context: tls))
        var settings = NIOHTTP2Handler.ConnectionConfiguration()
        settings.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: configuration.initialMaxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
        ]
        // No stream multiplexer: one handler reads every stream (see APNSEmulatorStreamHandler).
        try pipeline.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: settings))
        try pipeline.addHandler(APNSEmulatorStreamHandler(emulator: self, connection: connection))
    }

    /// Registers a token-signing key: requests signed with it may push to `bundleIDs` (any of their
    /// push-type topics). `environment` restricts the key to one environment, as Apple's
    /// topic-specific keys are; `nil` (a team key) works in both.
    public func register(_ key: APNSTestKey, bundleIDs: [String], environment: APNSEnvironment? = nil) {
        state.withLock { state in
            state.keys[key.keyID] = .init(teamID: key.teamID, publicKeyPEM: key.publicKeyPEM, environment: environment)
            state.teamBundles[key.teamID, default: []].formUnion(bundleIDs)
        }
    }

    /// Declares which app and environment a device token belongs to. Unregistered tokens are
    /// accepted for any topic; registered ones fail with `BadDeviceToken` in the other environment
    /// and `DeviceTokenNotForTopic` for another bundle ID.
    public func registerDevice(token: String, bundleID: String, environment: APNSEnvironment) {
        state.withLock { $0.devices[token] = .init(bundleID: bundleID, environment: environment) }
    }

    /// Closes the listener and every connection. Calling it again does nothing.
    public func shutdown() async {
        let connections = state.withLock { state in
            state.isShutDown = true
            return Array(state.connections.values)
        }
        for connection in connections { connection.channel?.close(promise: nil) }
        try? await listener.close()
    }
}

/// Lets the child-channel initializer reach the emulator, which exists only after the bind.
private final class EmulatorBox: Sendable {
    private let value = Mutex<APNSEmulator?>(nil)
    var emulator: APNSEmulator? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
