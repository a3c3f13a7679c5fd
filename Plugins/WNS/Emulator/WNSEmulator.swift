public import HubEmulatorKit
import Synchronization

public import struct Foundation.Date

/// A local stand-in for WNS and its token endpoints, over TLS (HTTP/1.1) on 127.0.0.1.
///
/// - `POST /accesstoken.srf`: the classic flow (package SID + secret, scope `notify.windows.com`).
/// - `POST /{tenant}/oauth2/v2.0/token`: the Entra ID flow (client ID + secret, scope
///   `https://wns.windows.com/.default`).
/// - `POST /channels/{id}`: a channel made by ``makeChannel(forApp:)``. Checks the bearer token and
///   that its app owns the channel (403), `X-WNS-Type`, a matching `Content-Type`, `Content-Length`,
///   well-formed XML whose root matches the type, the 5000-byte limit (413), `X-WNS-Tag`/`Group` of at
///   most 16 letters and digits, `X-WNS-TTL`, `X-WNS-Cache-Policy` and `X-WNS-PRIORITY` values; answers
///   with `X-WNS-Status`, `X-WNS-Msg-ID`, `X-WNS-Debug-Trace`, `MS-CV` (and
///   `X-WNS-DeviceConnectionStatus` only when asked).
///
/// Channel URIs look like `https://127.0.0.1:<port>/channels/<id>?token=…`; allow ``host`` in the
/// hub's channel policy to reach them.
public final class WNSEmulator: Sendable {
    /// A notification a channel accepted.
    public struct ReceivedNotification: Sendable, Hashable {
        public var channelID: String
        /// The app (package SID or Entra client ID) whose token sent it.
        public var app: String
        /// `wns/raw`, `wns/toast`, …
        public var type: String
        public var contentType: String
        public var body: [UInt8]
        public var tag: String?
        public var group: String?
        public var timeToLive: String?
        public var cachePolicy: String?
        public var priority: String?
        /// The body as UTF-8 text (XML for toast, tile and badge).
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct App {
        var secret: String
        var tenant: String?
    }

    struct Channel {
        var app: String
        var expired = false
        var throttled = false
    }

    struct State {
        var apps: [String: App] = [:]
        var channels: [String: Channel] = [:]
        var accessTokens: [String: (app: String, expires: Date)] = [:]
        var scripted: [(status: Int, retryAfter: Int?)] = []
        var received: [ReceivedNotification] = []
        var tokenRequests = 0
        var refusedSends: [Int] = []
        /// Whether channel sends go unanswered (``stopAnswering()``).
        var silent = false
        /// The unanswered sends, answered 503 at ``shutdown()``.
        var unanswered: [CheckedContinuation<Void, Never>] = []
        var unansweredCount = 0
        var stopped = false
    }

    let state = Mutex(State())
    let now: @Sendable () -> Date
    private let listener: EmulatorListener
    /// The CA whose certificate clients must trust.
    public var authority: TestCertificateAuthority { listener.authority }

    private init(listener: EmulatorListener, now: @escaping @Sendable () -> Date) {
        self.listener = listener
        self.now = now
    }

    /// Starts an emulator on 127.0.0.1 (`port` 0 picks a free one).
    public static func start(
        authority: TestCertificateAuthority? = nil, port: Int = 0, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> WNSEmulator {
        let emulator = try WNSEmulator(
            listener: EmulatorListener(authority: authority, commonName: "WNS emulator CA"), now: now)
        try await emulator.listener.start(port: port, http2: false) { [weak emulator] request in
            guard let emulator else { return .now(EmulatorResponse(status: 503)) }
            if request.path.hasPrefix("/channels/"), emulator.state.withLock({ $0.silent && !$0.stopped }) {
                return .later { await emulator.waitUnanswered() }
            }
            return .now(emulator.route(request))
        }
        return emulator
    }

    /// Stops listening and closes open connections; sends left unanswered get 503.
    public func shutdown() async throws {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.unanswered = [] }
            return state.unanswered
        }
        for continuation in waiting { continuation.resume() }
        try await listener.shutdown()
    }

    /// Makes every channel send from now on go unanswered (a host that accepts connections and
    /// requests but never answers) until ``shutdown()``.
    public func stopAnswering() {
        state.withLock { $0.silent = true }
    }

    /// Channel sends left unanswered so far (``stopAnswering()``).
    public var unansweredSends: Int { state.withLock { $0.unansweredCount } }

    private func waitUnanswered() async -> EmulatorResponse {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let parked = state.withLock { state in
                guard !state.stopped else { return false }
                state.unanswered.append(continuation)
                state.unansweredCount += 1
                return true
            }
            if !parked { continuation.resume() }
        }
        return EmulatorResponse(status: 503)
    }

    public var port: Int { listener.port }
    /// `127.0.0.1:<port>`: the entry to allow in the hub's channel policy.
    public var host: String { "127.0.0.1:\(port)" }
    public var baseURL: String { "https://\(host)" }
    /// The classic token endpoint, for `WNSConfiguration.classicTokenURL`.
    public var classicTokenURL: String { "\(baseURL)/accesstoken.srf" }
    /// The Entra ID authority, for `WNSConfiguration.entraAuthority`.
    public var entraAuthority: String { baseURL }
    /// The PEM certificate of ``authority``, to trust in clients.
    public var trustRootPEM: String { authority.certificatePEM }

    // MARK: Apps, channels and knobs

    /// Lets a Store app (package SID and client secret) get tokens from the classic endpoint.
    public func registerPackage(sid: String, secret: String) {
        state.withLock { $0.apps[sid] = App(secret: secret, tenant: nil) }
    }

    /// Lets an Entra ID app registration get tokens from its tenant's endpoint.
    public func registerEntraApp(tenantID: String, clientID: String, secret: String) {
        state.withLock { $0.apps[clientID] = App(secret: secret, tenant: tenantID) }
    }

    /// A new channel owned by `app` (a package SID or Entra client ID). - Returns: its channel URI.
    public func makeChannel(forApp app: String) -> String {
        let id = EmulatorText.randomHex(8)
        state.withLock { $0.channels[id] = Channel(app: app) }
        return "\(baseURL)/channels/\(id)?token=\(EmulatorText.randomHex(16))"
    }

    /// Makes the channel answer 410 Gone from now on.
    public func expireChannel(_ channelURI: String) {
        let id = Self.channelID(channelURI)
        state.withLock { $0.channels[id]?.expired = true }
    }

    /// Forgets the channel: it answers 404 from now on.
    public func removeChannel(_ channelURI: String) {
        let id = Self.channelID(channelURI)
        state.withLock { _ = $0.channels.removeValue(forKey: id) }
    }

    /// Makes the channel answer 200 with `X-WNS-Status: channelthrottled` (nothing delivered).
    public func throttleChannel(_ channelURI: String, _ throttled: Bool = true) {
        let id = Self.channelID(channelURI)
        state.withLock { $0.channels[id]?.throttled = throttled }
    }

    /// Answers the next `count` sends with `status` (406, 413, 500, 503, …), with `Retry-After` when given.
    public func failNextSends(_ count: Int, status: Int, retryAfter: Int? = nil) {
        state.withLock { $0.scripted += Array(repeating: (status, retryAfter), count: count) }
    }

    /// Invalidates every access token issued so far: sends with them get 401.
    public func expireAccessTokens() {
        state.withLock { $0.accessTokens = [:] }
    }

    // MARK: Records

    /// Accepted notifications in arrival order.
    public var received: [ReceivedNotification] { state.withLock { $0.received } }
    /// Accepted notifications of one channel.
    public func received(on channelURI: String) -> [ReceivedNotification] {
        let id = Self.channelID(channelURI)
        return received.filter { $0.channelID == id }
    }
    /// Tokens issued by either endpoint.
    public var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    /// Statuses of refused sends, in order.
    public var refusedSends: [Int] { state.withLock { $0.refusedSends } }

    static func channelID(_ channelURI: String) -> String {
        let path = channelURI.split(separator: "?", maxSplits: 1).first.map(String.init) ?? channelURI
        return path.split(separator: "/").last.map(String.init) ?? ""
    }
}
