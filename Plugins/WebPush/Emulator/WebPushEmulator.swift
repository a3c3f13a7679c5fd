import Crypto
public import Foundation
public import HubEmulatorKit
import Synchronization

/// A local stand-in for a browser push service (RFC 8030) on 127.0.0.1, over TLS (HTTP/2, and
/// HTTP/1.1 for clients that do not offer `h2` by ALPN, such as pywebpush), that checks what real
/// push services check and decrypts what it accepts, as the browser would.
///
/// `POST /push/{id}` to a subscription made by ``makeSubscription(applicationServerKey:)``:
/// - `Authorization: vapid t=<JWT>, k=<key>` (RFC 8292): an ES256 JWT with header `typ: JWT`,
///   `alg: ES256` whose signature the key `k` verifies, `aud` equal to this service's origin
///   (`https://127.0.0.1:<port>`), `exp` in the future and at most 24 hours ahead, `sub` a `mailto:`
///   or `https:` URL (401 `BadJwtToken` otherwise); `k` equal to the subscription's
///   `applicationServerKey` when it has one (403 `VapidPkHashMismatch`);
/// - `TTL` required, an integer from 0 to ``maximumTTL`` (400 `BadTtl`, as FCM's push service
///   refuses a larger one); `Urgency` one of `very-low`, `low`,
///   `normal`, `high` (400 `BadUrgency`); `Topic` at most 32 URL-safe base64 characters
///   (400 `BadWebPushTopic`); `Content-Encoding: aes128gcm` (400);
/// - a body of at most 4,096 bytes (413 `PayloadTooLarge`) that decrypts with the subscription's
///   private key and authentication secret per RFC 8291 into one record ending in the delimiter
///   `0x02` (400 `BadWebPushRequest` otherwise);
/// - 404 for an unknown subscription, 410 for an expired one (``expire(_:)``); scripted answers
///   (404, 410, 413, 429 with `Retry-After`, 5xx) with ``failNextSends(_:status:retryAfter:)``.
///
/// Accepted messages answer `201 Created` with `Location` and the applied `TTL`, and are recorded
/// decrypted (``received``). Errors carry Apple's JSON `{"reason": …}`.
///
/// A plaintext that is JSON with a `web_push` member is read as a declarative push message
/// (``readDeclarative(_:)``): one that fails the checks is refused with 400
/// `BadDeclarativeMessage: <what failed>`; one that passes is recorded with
/// ``ReceivedMessage/isDeclarative`` set.
///
/// Started with `distributor: true` it plays a UnifiedPush distributor's push server instead
/// (`hub emulate unifiedpush`): a GET of an endpoint answers `{"unifiedpush":{"version":1}}` (or
/// what ``answerChecks(_:)`` scripts), and a POST needs VAPID only for a subscription bound to a key.
public final class WebPushEmulator: Sendable {
    /// A subscription as a browser hands it to the page, plus the private half the browser keeps.
    public struct Subscription: Sendable {
        public var id: String
        /// The push resource URL.
        public var endpoint: String
        /// The user agent's public key, uncompressed (65 bytes).
        public var p256dh: [UInt8]
        /// The 16-byte authentication secret.
        public var auth: [UInt8]
        let privateKey: P256.KeyAgreement.PrivateKey
        /// The VAPID public key the page subscribed with; `nil` accepts any key.
        public var applicationServerKey: [UInt8]?

        /// `PushSubscription.toJSON()` of this subscription, as a page posts it to the hub.
        public var json: String {
            let keys =
                #"{"p256dh":"\#(WebPushEmulator.base64URL(p256dh))","auth":"\#(WebPushEmulator.base64URL(auth))"}"#
            return #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":\#(keys)}"#
        }

        /// The user agent's private key as the URL-safe base64 of its 32-byte scalar (for tools
        /// such as http-ece that decrypt as the browser does).
        public var privateKeyBase64URL: String { WebPushEmulator.base64URL(Array(privateKey.rawRepresentation)) }
    }

    /// A message a subscription accepted, decrypted.
    public struct ReceivedMessage: Sendable, Hashable {
        public var subscriptionID: String
        public var plaintext: [UInt8]
        /// The encrypted body as sent.
        public var body: [UInt8]
        public var timeToLive: Int
        public var urgency: String?
        public var topic: String?
        /// The VAPID JWT's `sub`.
        public var subject: String
        /// The VAPID public key (`k`), URL-safe base64.
        public var vapidKey: String
        /// The VAPID JWT's `exp`; `nil` for a distributor's push without VAPID.
        public var vapidExpiry: Date?
        /// `HTTP/2.0` or `HTTP/1.1`: how the message came.
        public var httpVersion: String
        /// Whether the plaintext is a valid declarative push message (``readDeclarative(_:)``).
        public var isDeclarative = false
        /// The plaintext as UTF-8 text.
        public var text: String { String(decoding: plaintext, as: UTF8.self) }
    }

    struct State {
        var subscriptions: [String: Subscription] = [:]
        var expired: Set<String> = []
        var scripted: [(status: Int, retryAfter: Int?)] = []
        var received: [ReceivedMessage] = []
        var refusals: [(status: Int, reason: String)] = []
        var messageCount = 0
        var checkAnswer = CheckAnswer.unifiedPush
        var checks = 0
    }

    /// What a distributor answers to the GET of an endpoint (the UnifiedPush endpoint check).
    public enum CheckAnswer: Sendable, Hashable {
        /// 200 with `{"unifiedpush":{"version":1}}`, as a UnifiedPush push server must.
        case unifiedPush
        /// This status with an empty JSON object (a 404 of a server that is no distributor).
        case status(Int)
        /// 200 with this body (a server that is not a UnifiedPush one, or another version).
        case body(String)
        /// 302 to this URL (which a hub must not follow).
        case redirect(String)
    }

    /// The largest `TTL` accepted: 2,419,200 s (28 days), FCM's documented maximum.
    public static let maximumTTL = 2_419_200

    let state = Mutex(State())
    let now: @Sendable () -> Date
    /// Whether it plays a UnifiedPush distributor (GET checks answered, VAPID optional).
    public let distributor: Bool
    private let listener: EmulatorListener
    /// The CA whose certificate clients must trust.
    public var authority: TestCertificateAuthority { listener.authority }

    private init(listener: EmulatorListener, distributor: Bool, now: @escaping @Sendable () -> Date) {
        self.listener = listener
        self.distributor = distributor
        self.now = now
    }

    /// Starts an emulator on 127.0.0.1 (`port` 0 picks a free one).
    /// - Parameters:
    ///   - authority: the CA that signs its certificate; a new one by default.
    ///   - port: the port; 0 picks a free one.
    ///   - distributor: play a UnifiedPush distributor's push server instead of a browser's push service.
    ///   - now: the clock VAPID expiry is checked against.
    public static func start(
        authority: TestCertificateAuthority? = nil, port: Int = 0, distributor: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> WebPushEmulator {
        let emulator = try WebPushEmulator(
            listener: EmulatorListener(
                authority: authority, commonName: distributor ? "UnifiedPush emulator CA" : "Web Push emulator CA"),
            distributor: distributor, now: now)
        try await emulator.listener.start(port: port, http2: true, maximumBodyBytes: 64 * 1024) {
            [weak emulator] request in
            .now(emulator?.route(request) ?? EmulatorResponse(status: 503))
        }
        return emulator
    }

    /// Stops listening and closes open connections.
    public func shutdown() async throws {
        try await listener.shutdown()
    }

    public var port: Int { listener.port }
    /// `127.0.0.1:<port>`: the entry to allow in the hub's endpoint policy.
    public var host: String { "127.0.0.1:\(port)" }
    /// The push service's origin: the `aud` VAPID tokens must carry.
    public var origin: String { "https://\(host)" }
    /// The PEM certificate of ``authority``, to trust in clients.
    public var trustRootPEM: String { authority.certificatePEM }

    // MARK: Subscriptions and knobs

    /// A new subscription, as `pushManager.subscribe({applicationServerKey})` makes one.
    /// - Parameter applicationServerKey: the VAPID public key (65 bytes) sends must use; `nil` accepts any.
    public func makeSubscription(applicationServerKey: [UInt8]? = nil) -> Subscription {
        let privateKey = P256.KeyAgreement.PrivateKey()
        let id = EmulatorText.randomHex(12)
        let subscription = Subscription(
            id: id, endpoint: "\(origin)/push/\(id)", p256dh: Array(privateKey.publicKey.x963Representation),
            auth: (0..<16).map { _ in UInt8.random(in: 0...255) }, privateKey: privateKey,
            applicationServerKey: applicationServerKey)
        state.withLock { $0.subscriptions[id] = subscription }
        return subscription
    }

    /// Makes the subscription answer 410 Gone from now on (the user unsubscribed).
    public func expire(_ subscription: Subscription) {
        state.withLock { _ = $0.expired.insert(subscription.id) }
    }

    /// Forgets the subscription: it answers 404 from now on.
    public func remove(_ subscription: Subscription) {
        state.withLock { _ = $0.subscriptions.removeValue(forKey: subscription.id) }
    }

    /// What GETs of endpoints answer from now on (distributor mode).
    public func answerChecks(_ answer: CheckAnswer) {
        state.withLock { $0.checkAnswer = answer }
    }

    /// How many endpoint checks (GETs of endpoints) came.
    public var checkCount: Int { state.withLock { $0.checks } }

    /// Answers the next `count` sends that pass authentication with `status` (404, 410, 413, 429,
    /// 500, 503, …), with `Retry-After` when given.
    public func failNextSends(_ count: Int, status: Int, retryAfter: Int? = nil) {
        state.withLock { $0.scripted += Array(repeating: (status, retryAfter), count: count) }
    }

    // MARK: Records

    /// Accepted messages in arrival order.
    public var received: [ReceivedMessage] { state.withLock { $0.received } }
    /// Accepted messages of one subscription.
    public func received(by subscription: Subscription) -> [ReceivedMessage] {
        received.filter { $0.subscriptionID == subscription.id }
    }
    /// Refused sends in order: status and Apple-style reason.
    public var refusals: [(status: Int, reason: String)] { state.withLock { $0.refusals } }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func fromBase64URL(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.count % 4 != 1 else { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}

extension WebPushEmulator {
    /// A VAPID key pair for development: the private key as a PKCS #8 PEM (to write to a private
    /// file) and the public key (the `applicationServerKey`, 65 bytes).
    public static func makeVAPIDKey() -> (privateKeyPEM: String, publicKey: [UInt8]) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, Array(key.publicKey.x963Representation))
    }

    /// The public key (65 bytes) of a VAPID private key PEM; `nil` when the text is not a P-256 key.
    public static func vapidPublicKey(fromPEM pem: String) -> [UInt8]? {
        (try? P256.Signing.PrivateKey(pemRepresentation: pem)).map { Array($0.publicKey.x963Representation) }
    }

    /// `bytes` in URL-safe base64 without padding (how keys are printed and passed to browsers).
    public static func base64URLString(_ bytes: [UInt8]) -> String { base64URL(bytes) }
}
