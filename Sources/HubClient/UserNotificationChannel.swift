/// The signed-in user's notifications in one cross-device app (Graph's `UserNotificationChannel`).
///
/// Get it from ``HubClient/notificationChannel`` and create readers from it.
public struct UserNotificationChannel: Sendable {
    public let client: HubClient

    public init(client: HubClient) {
        self.client = client
    }

    /// A reader of the user's notifications: history, and the changes as they arrive.
    public func createReader() -> UserNotificationReader {
        UserNotificationReader(client: client)
    }
}

/// Which notifications ``UserNotificationReader/readBatch(maxSize:filter:)`` returns; `nil`
/// properties do not filter.
public struct UserNotificationFilter: Sendable, Hashable {
    public var readState: ReadState?
    public var userActionState: UserActionState?
    /// `active` by default; `nil` returns every status, tombstones included.
    public var status: NotificationStatus?

    public init(
        readState: ReadState? = nil, userActionState: UserActionState? = nil, status: NotificationStatus? = .active
    ) {
        self.readState = readState
        self.userActionState = userActionState
        self.status = status
    }
}

/// Reads the user's notifications (Graph's `UserNotificationReader`): ``readBatch(maxSize:filter:)``
/// for the history a view shows, ``changes`` for what changes from now on.
///
/// ```swift
/// let reader = client.notificationChannel.createReader()
/// var unread = try await reader.readBatch(maxSize: 100, filter: .init(readState: .unread))
/// for try await change in reader.changes {
///     unread.removeAll { $0.id == change.id }
///     if change.status == .active && change.readState == .unread { unread.insert(change, at: 0) }
/// }
/// ```
public struct UserNotificationReader: Sendable {
    public let client: HubClient

    /// The user's notifications, newest first (`GET /v1/apps/{app}/me/notifications`).
    ///
    /// - Parameters:
    ///   - maxSize: the most notifications returned, 1–1000 (other values are clamped).
    ///   - filter: by read state, action state and status; active notifications by default.
    /// - Throws: ``HubClientError``, or `CancellationError`.
    public func readBatch(
        maxSize: Int = 100, filter: UserNotificationFilter = UserNotificationFilter()
    ) async throws -> [UserNotification] {
        var request = HubRequest(method: "GET", path: ["me", "notifications"])
        request.query.append(("limit", String(min(max(maxSize, 1), 1000))))
        if let readState = filter.readState { request.query.append(("readState", readState.rawValue)) }
        if let action = filter.userActionState { request.query.append(("userActionState", action.rawValue)) }
        request.query.append(("status", filter.status?.rawValue ?? "all"))
        let list = try await client.requester.send(request, as: NotificationList.self)
        return list.notifications.map { UserNotification($0, client: client) }
    }

    /// Every change of the user's notifications after the client's stored feed position, oldest
    /// first: new notifications, republished ones, state changes made on any device (this one
    /// included), and `expired` / `deleted` tombstones. The first iteration after installing
    /// starts at the beginning of the feed, so it replays the current notifications.
    ///
    /// How changes arrive follows ``HubClient/Configuration/feedUpdates``: by default a polling
    /// endpoint (or none) long-polls the hub, a push endpoint waits for
    /// ``HubClient/handleShoulderTap(_:)``. Iterating starts syncing; the sync stops when every
    /// iteration ended. Several iterations at once each get every change.
    ///
    /// Connection failures and 5xx answers are retried with back-off; an error that retrying cannot
    /// fix (``HubClientError/Code/unauthorized`` after a token refresh,
    /// ``HubClientError/Code/notFound``) ends the iteration by throwing it. The feed position is
    /// saved as changes are handed out, so a new client with the same storage resumes after the
    /// last change handed out. Changes that arrive after the last iteration stopped are not handed
    /// out and do not move the position: the next iteration gets them.
    public var changes: UserNotificationChanges {
        UserNotificationChanges(client: client)
    }

    /// Syncs the feed now and returns the changes since the last sync; iterations of ``changes``
    /// get them too. Call it when the app comes to the foreground if it has no push.
    public func sync() async throws -> [UserNotification] {
        try await client.feed.syncNow().map { UserNotification($0, client: client) }
    }
}

/// The changes of a user's notifications as an `AsyncSequence`; see
/// ``UserNotificationReader/changes``. Iteration throws ``HubClientError``.
public struct UserNotificationChanges: AsyncSequence, Sendable {
    public typealias Element = UserNotification

    let client: HubClient

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client)
    }

    /// Subscribes to the client's feed on the first call of ``next()``.
    public struct Iterator: AsyncIteratorProtocol {
        let client: HubClient
        var upstream: AsyncThrowingStream<NotificationResource, any Error>.AsyncIterator?

        /// The next change; `nil` when the iterating task was cancelled.
        public mutating func next() async throws -> UserNotification? {
            if upstream == nil {
                upstream = await client.feed.subscribe().makeAsyncIterator()
            }
            return try await upstream?.next().map { UserNotification($0, client: client) }
        }
    }
}

/// How ``UserNotificationReader/changes`` learns about new changes of the feed.
public struct FeedUpdates: Sendable, Hashable, CustomStringConvertible {
    enum Mode: String, Sendable, Hashable {
        case automatic, longPolling, serverSentEvents, shoulderTaps
    }

    let mode: Mode

    /// Long-polling for a polling endpoint (or none registered), shoulder taps for a push endpoint.
    public static let automatic = FeedUpdates(mode: .automatic)
    /// Requests that wait up to ``HubClient/Configuration/longPollWait`` for a change (`wait=`).
    public static let longPolling = FeedUpdates(mode: .longPolling)
    /// One long-lived `text/event-stream` response, resumed with `Last-Event-ID` after a drop.
    public static let serverSentEvents = FeedUpdates(mode: .serverSentEvents)
    /// Only ``HubClient/handleShoulderTap(_:)`` and ``UserNotificationReader/sync()`` sync, plus
    /// one sync when an iteration starts.
    public static let shoulderTaps = FeedUpdates(mode: .shoulderTaps)

    public var description: String { mode.rawValue }
}
