public import struct Foundation.Date

/// One logical app across devices, named by its domain (Graph's `targetHostName`).
///
/// It maps up to `Platform.maxAppIDs` app IDs per platform, names the identity registrations
/// whose tokens sign its users in, holds the push credentials per provider and the publishers
/// allowed to notify its users.
public struct CrossDeviceApp: Sendable, Hashable, Identifiable {
    /// The app's domain, such as `notes.contoso.com`.
    public var id: String
    /// A display name, such as `Contoso Notes`.
    public var name: String
    /// App IDs per supported platform, in the order given.
    public var platforms: [Platform: [String]]
    public var identity: [IdentityRegistration]
    public var credentials: PushCredentials
    public var domain: DomainVerification?
    public var publishers: [Publisher]
    public var delivery: DeliveryPolicy
    /// The most endpoints one user of this app may have (hub.yaml `apps[].maxEndpointsPerUser`);
    /// `nil`: the hub's ``HubConfiguration/maxEndpointsPerUser``.
    public var maxEndpointsPerUser: Int?
    /// This app's weight in each transport lane's fair share (hub.yaml `apps[].dispatchWeight`,
    /// default 1): while several apps have sends in flight in a lane, an app may hold about
    /// `weight / total weight` of its slots (see ``DispatcherConfiguration/maxUserShare``).
    public var dispatchWeight: Int = 1
    /// The app server's endpoints that hear about deliveries and state changes (hub.yaml
    /// `apps[].webhooks`).
    public var webhooks: [Webhook] = []

    public init(
        id: String,
        name: String,
        platforms: [Platform: [String]] = [:],
        identity: [IdentityRegistration] = [],
        credentials: PushCredentials = PushCredentials(),
        domain: DomainVerification? = nil,
        publishers: [Publisher] = [],
        delivery: DeliveryPolicy = DeliveryPolicy()
    ) {
        self.id = id
        self.name = name
        self.platforms = platforms
        self.identity = identity
        self.credentials = credentials
        self.domain = domain
        self.publishers = publishers
        self.delivery = delivery
    }

    /// The platforms this app supports, in onboarding order.
    public var supportedPlatforms: [Platform] {
        Platform.known.filter { platforms[$0] != nil } + platforms.keys.filter { !Platform.known.contains($0) }
    }

    /// Whether `appID` is one of this app's IDs on `platform`.
    public func contains(appID: String, on platform: Platform) -> Bool {
        platforms[platform]?.contains(appID) ?? false
    }
}

/// An identity provider app registration whose tokens sign users in (MSA/AAD-style).
public struct IdentityRegistration: Sendable, Hashable {
    public enum KeySource: Sendable, Hashable {
        /// A JWKS document in a local file (RS256/ES256 keys).
        case jwksFile(path: String)
        /// A JWKS document served over HTTPS.
        case jwksURL(String)
        /// A shared secret, for app servers that mint HS256 user tokens themselves.
        case secret(Secret)
    }

    public var issuer: String
    public var audiences: [String]
    public var keys: KeySource
    /// The claim that names the user; `sub` unless configured.
    public var userClaim: String

    public init(issuer: String, audiences: [String], keys: KeySource, userClaim: String = "sub") {
        self.issuer = issuer
        self.audiences = audiences
        self.keys = keys
        self.userClaim = userClaim
    }
}

/// The proof that the operator controls the app's domain.
public struct DomainVerification: Sendable, Hashable {
    /// The token the domain must serve, `hub-verify=…`.
    public var token: String
    /// When `hub map-app verify-domain` last found the token, if ever.
    public var verifiedAt: Date?

    public init(token: String, verifiedAt: Date? = nil) {
        self.token = token
        self.verifiedAt = verifiedAt
    }
}

/// An app server allowed to publish notifications for the app's users.
public struct Publisher: Sendable, Hashable {
    public var name: String
    public var key: Secret

    public init(name: String, key: Secret) {
        self.name = name
        self.key = key
    }
}

/// How notifications reach devices.
public struct DeliveryMode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Content-free silent pushes that tell the device to sync its feed (the default).
    public static let shoulderTap = DeliveryMode(rawValue: "shoulderTap")
    /// The hub renders `visualContent` natively (APNs alert, FCM notification, WNS toast).
    public static let visible = DeliveryMode(rawValue: "visible")
    public static let known: [DeliveryMode] = [.shoulderTap, .visible]
    public var description: String { rawValue }
}

/// Per-app delivery settings.
public struct DeliveryPolicy: Sendable, Hashable {
    public var mode: DeliveryMode
    /// What the app icon's badge shows (hub.yaml `delivery.badge`); `nil`: the hub sends no badge
    /// but one a publish gives in `visualContent.badge`.
    public var badge: BadgeSource?

    /// - Parameters:
    ///   - mode: the app's default delivery mode.
    ///   - badge: what the app icon's badge shows; `nil` for no badge of the hub's.
    public init(mode: DeliveryMode = .shoulderTap, badge: BadgeSource? = nil) {
        self.mode = mode
        self.badge = badge
    }
}
