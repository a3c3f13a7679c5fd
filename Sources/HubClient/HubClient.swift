public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The device side of a NotificationHub for one cross-device app: registers this app install as
/// an endpoint, syncs the signed-in user's notification feed, and saves read / dismissed state so
/// the user's other devices follow (the open successor of the Graph Notifications client SDK).
///
/// ```swift
/// let client = HubClient(
///     baseURL: URL(string: "https://hub.contoso.com")!, app: "notes.contoso.com",
///     storage: FileHubClientStorage(url: stateFile)
/// ) { reason in
///     try await auth.accessToken(forceRefresh: reason == .invalidated)
/// }
/// try await client.register(.polling(platform: .ios, appId: "com.contoso.notes"))
///
/// let reader = client.notificationChannel.createReader()
/// let history = try await reader.readBatch(maxSize: 50)
/// for try await notification in reader.changes { render(notification) }
/// ```
///
/// One client per app and signed-in user. The client keeps its endpoint ID and feed position in
/// its ``storage``, so a client created again with the same storage (after a restart) registers the
/// same endpoint and resumes the feed where it stopped, without duplicates or gaps.
public final class HubClient: Sendable {
    /// Tuning of a client; the defaults suit apps.
    public struct Configuration: Sendable {
        /// How ``UserNotificationReader/changes`` learns about new changes.
        public var feedUpdates: FeedUpdates = .automatic
        /// How long one long-poll waits for a change (the hub clamps it to its maximum, 60 s by
        /// default).
        public var longPollWait: Duration = .seconds(30)
        /// Changes fetched per feed request (1–1000).
        public var pageSize: Int = 100
        /// The first delay before a failed sync is retried; it doubles, with jitter, up to
        /// ``maximumRetryDelay``.
        public var initialRetryDelay: Duration = .seconds(1)
        public var maximumRetryDelay: Duration = .seconds(60)
        /// Shows the app icon badge a shoulder tap carries (``ShoulderTap/badge``, sent when the
        /// hub's app has `delivery.badge: unread`), and the one the hub answers when this device
        /// saves a state change (``UserNotification/save()``: it is not tapped for it), such as
        /// `{ try? await UNUserNotificationCenter.current().setBadgeCount($0) }`. On iOS the system
        /// already applied an APNs `aps.badge`; on Android and the web this is where the count goes.
        /// `nil` (the default): the client leaves badges alone.
        public var applyBadge: (@Sendable (Int) async -> Void)?

        public init() {}
    }

    /// The hub's base URL, such as `https://hub.contoso.com` (the API lives under `/v1/apps/…`).
    public let baseURL: URL
    /// The cross-device app's ID: its domain, such as `notes.contoso.com`.
    public let app: String
    public let configuration: Configuration
    /// Where the endpoint ID, the registration and the feed position survive restarts.
    public let storage: any HubClientStorage
    /// This app install's endpoint ID: generated on first use, then read from ``storage``.
    public let endpointID: String

    let requester: Requester
    let registrations: Broadcast<RegistrationState>
    let feed: FeedSynchronizer

    /// The session clients use unless given one: ``uncachedConfiguration()``.
    public static let defaultSession = URLSession(configuration: uncachedConfiguration())

    /// An ephemeral session configuration without a URL cache. The hub's answers are never
    /// cached, and on Linux a `URLCache` opens a window in which cancelling a task that has just
    /// finished traps in Foundation ("Trying to access a behaviour for a task that in not in the
    /// registry"), as a long poll or event stream cancelled at the end of its wait can be.
    public static func uncachedConfiguration() -> URLSessionConfiguration {
        withoutCache(.ephemeral)
    }

    /// A copy of `configuration` without a URL cache (see ``uncachedConfiguration()``).
    static func withoutCache(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        let copy = (configuration.copy() as? URLSessionConfiguration) ?? .ephemeral
        copy.urlCache = nil
        copy.requestCachePolicy = .reloadIgnoringLocalCacheData
        return copy
    }

    /// Creates a client; it sends nothing until it is used.
    ///
    /// - Parameters:
    ///   - baseURL: the hub's base URL.
    ///   - app: the cross-device app's ID (its domain).
    ///   - storage: where state survives restarts; `UserDefaults` by default. Give each signed-in
    ///     user their own storage (or call ``resetLocalState()`` at sign-out).
    ///   - session: the URL session requests go through; by default one without a URL cache
    ///     (``uncachedConfiguration()``). On Linux, give it a session without a `URLCache`:
    ///     swift-corelibs-foundation can trap when a task is cancelled while its cache lookup runs.
    ///   - configuration: feed and retry tuning.
    ///   - tokenProvider: returns the user's token; see ``TokenRequestReason``.
    public init(
        baseURL: URL, app: String, storage: any HubClientStorage = UserDefaultsHubClientStorage(),
        session: URLSession = HubClient.defaultSession, configuration: Configuration = Configuration(),
        tokenProvider: @escaping TokenProvider
    ) {
        self.baseURL = baseURL
        self.app = app
        self.configuration = configuration
        self.storage = storage
        let keys = StorageKeys(app: app)
        if let stored = storage.data(forKey: keys.endpointID).map({ String(decoding: $0, as: UTF8.self) }),
            !stored.isEmpty
        {
            endpointID = stored
        } else {
            endpointID = UUID().uuidString.lowercased()
            // A failed save only costs a new ID after the next restart; registering still works.
            try? storage.setData(Data(endpointID.utf8), forKey: keys.endpointID)
        }
        requester = Requester(baseURL: baseURL, app: app, session: session, tokens: TokenCache(provider: tokenProvider))
        let lastEndpoint = storage.data(forKey: keys.endpoint).flatMap {
            try? HubJSON.decoder.decode(Endpoint.self, from: $0)
        }
        registrations = Broadcast(lastEndpoint.map(RegistrationState.init) ?? .notRegistered)
        feed = FeedSynchronizer(
            requester: requester, storage: storage, key: keys.feed, endpointID: endpointID,
            configuration: configuration, registrations: registrations, session: session)
    }

    /// The user's notification channel (Graph's `UserNotificationChannel`).
    public var notificationChannel: UserNotificationChannel {
        UserNotificationChannel(client: self)
    }

    /// Forgets the registration and the feed position kept in ``storage`` (call it at sign-out,
    /// after ``unregister()``). The endpoint ID stays: it names this app install.
    public func resetLocalState() async throws {
        await feed.reset()
        do {
            try storage.setData(nil, forKey: StorageKeys(app: app).endpoint)
        } catch {
            throw HubClientError(.storage, "The registration could not be removed from storage.", underlying: error)
        }
        registrations.send(.notRegistered)
    }
}

/// The storage keys of one app's state.
struct StorageKeys {
    let app: String
    var endpointID: String { "\(app).endpointId" }
    var endpoint: String { "\(app).endpoint" }
    var feed: String { "\(app).feed" }
}
