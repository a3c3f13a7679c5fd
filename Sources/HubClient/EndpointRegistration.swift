public import Foundation

/// What a device registers with the hub: this app install, and how the hub reaches it.
///
/// Use the factory for the device's push provider; each takes exactly what that provider needs:
///
/// ```swift
/// // iOS, in application(_:didRegisterForRemoteNotificationsWithDeviceToken:)
/// try await client.register(.apns(appId: Bundle.main.bundleIdentifier!, deviceToken: deviceToken,
///                                  environment: .production, appDisplayName: "Contoso Notes"))
/// // No push (simulators, desktops, tests): the hub wakes the device's long-poll instead.
/// try await client.register(.polling(platform: .ios, appId: "com.contoso.notes"))
/// ```
public struct EndpointRegistration: Sendable, Hashable {
    public var platform: Platform
    /// One of the cross-device app's IDs for ``platform``: bundle ID, package name, package
    /// family name or web origin.
    public var appId: String
    public var transport: TransportID
    /// The push token (APNs hex token, FCM registration token) or channel URI (WNS); `nil` for
    /// polling.
    public var token: String?
    /// The APNs environment of the token; `nil` for other transports.
    public var environment: APNSEnvironment?
    /// A name for the app install that the user might recognise in a list of devices.
    public var appDisplayName: String?

    /// A registration for any transport, including custom ones the hub was built with.
    public init(
        platform: Platform, appId: String, transport: TransportID, token: String? = nil,
        environment: APNSEnvironment? = nil, appDisplayName: String? = nil
    ) {
        self.platform = platform
        self.appId = appId
        self.transport = transport
        self.token = token
        self.environment = environment
        self.appDisplayName = appDisplayName
    }

    /// An iOS app install tapped through APNs.
    /// - Parameters:
    ///   - appId: the app's bundle ID.
    ///   - deviceToken: the token from `didRegisterForRemoteNotificationsWithDeviceToken`; it is
    ///     sent as lowercase hex.
    ///   - environment: `development` for builds signed for development, else `production`.
    ///   - appDisplayName: a name the user might recognise.
    public static func apns(
        appId: String, deviceToken: Data, environment: APNSEnvironment, appDisplayName: String? = nil
    ) -> EndpointRegistration {
        let hex = deviceToken.map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined()
        return EndpointRegistration(
            platform: .ios, appId: appId, transport: .apns, token: hex, environment: environment,
            appDisplayName: appDisplayName)
    }

    /// An Android app install tapped through FCM, with its registration token.
    public static func fcm(appId: String, token: String, appDisplayName: String? = nil) -> EndpointRegistration {
        EndpointRegistration(
            platform: .android, appId: appId, transport: .fcm, token: token, appDisplayName: appDisplayName)
    }

    /// A Windows app install tapped through WNS, with its channel URI.
    public static func wns(appId: String, channelURI: String, appDisplayName: String? = nil) -> EndpointRegistration {
        EndpointRegistration(
            platform: .windows, appId: appId, transport: .wns, token: channelURI, appDisplayName: appDisplayName)
    }

    /// An app install without push: the hub wakes the device's long-poll or event stream.
    public static func polling(
        platform: Platform, appId: String, appDisplayName: String? = nil
    ) -> EndpointRegistration {
        EndpointRegistration(platform: platform, appId: appId, transport: .polling, appDisplayName: appDisplayName)
    }
}

/// An endpoint as the hub keeps it: one app install on one device for one user. The push token is
/// never sent back.
public struct Endpoint: Sendable, Hashable, Codable, Identifiable {
    /// The ID the client generated once and keeps in its storage.
    public var id: String
    public var platform: Platform
    public var appId: String
    public var transport: TransportID
    public var environment: APNSEnvironment?
    public var appDisplayName: String?
    /// `inactive` once a push provider said the token is dead.
    public var state: EndpointState
    /// The provider's reason, such as `Unregistered`, when ``state`` is `inactive`.
    public var inactiveReason: String?
    public var inactiveSince: Date?
    public var registeredDateTime: Date
    /// When this endpoint last synced its feed, if ever.
    public var lastSyncDateTime: Date?

    public init(
        id: String, platform: Platform, appId: String, transport: TransportID, environment: APNSEnvironment? = nil,
        appDisplayName: String? = nil, state: EndpointState = .active, inactiveReason: String? = nil,
        inactiveSince: Date? = nil, registeredDateTime: Date, lastSyncDateTime: Date? = nil
    ) {
        self.id = id
        self.platform = platform
        self.appId = appId
        self.transport = transport
        self.environment = environment
        self.appDisplayName = appDisplayName
        self.state = state
        self.inactiveReason = inactiveReason
        self.inactiveSince = inactiveSince
        self.registeredDateTime = registeredDateTime
        self.lastSyncDateTime = lastSyncDateTime
    }
}

/// Where this device's registration stands (Graph's notification registration state).
public enum RegistrationState: Sendable, CustomStringConvertible {
    /// Nothing registered yet, or the endpoint was unregistered.
    case notRegistered
    /// The hub has the endpoint and taps it.
    case registered(Endpoint)
    /// A push provider said the token is dead; the hub no longer taps it. Register again with
    /// the device's current token.
    case inactive(reason: String, endpoint: Endpoint)
    /// The last registration attempt failed; the hub may still have an older registration.
    case failed(HubClientError)

    /// The registered endpoint, active or not.
    public var endpoint: Endpoint? {
        switch self {
        case .registered(let endpoint), .inactive(_, let endpoint): endpoint
        case .notRegistered, .failed: nil
        }
    }

    /// The state an endpoint the hub returned is in.
    init(_ endpoint: Endpoint) {
        self =
            endpoint.state == .inactive
            ? .inactive(reason: endpoint.inactiveReason ?? "inactive", endpoint: endpoint) : .registered(endpoint)
    }

    public var description: String {
        switch self {
        case .notRegistered: "not registered"
        case .registered(let endpoint): "registered \(endpoint.id) (\(endpoint.transport))"
        case .inactive(let reason, let endpoint): "inactive \(endpoint.id): \(reason)"
        case .failed(let error): "failed: \(error)"
        }
    }
}
