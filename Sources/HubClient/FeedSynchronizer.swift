import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Owns a client's feed position and hands every change after it to the subscribers of
/// ``UserNotificationReader/changes`` exactly once.
///
/// Syncs may overlap (a long-poll in flight while a shoulder tap syncs): each page is applied in
/// one step on the actor, and only changes newer than the position are handed out, so overlapping
/// syncs never duplicate or reorder changes. The position (the hub's opaque cursor and the
/// `changeVersion` it stands for) is saved after every applied page.
///
/// The position moves only for changes someone got: the caller of ``syncNow()``, or, for the
/// update loop's pages (``Audience/subscribers``), an iteration that took them. A page the loop
/// fetched as the last iteration stopped is dropped, and the loop ends, so the next iteration —
/// or a client created again on the same storage — fetches it again.
actor FeedSynchronizer {
    /// Where the feed was read up to.
    struct Position: Codable, Sendable {
        var cursor: String?
        var version: Int64 = 0
    }

    let requester: Requester
    let storage: any HubClientStorage
    let key: String
    let endpointID: String
    let configuration: HubClient.Configuration
    let registrations: Broadcast<RegistrationState>
    let session: URLSession
    private(set) var position: Position
    private var subscribers: [UUID: AsyncThrowingStream<NotificationResource, any Error>.Continuation] = [:]
    private var loop: Task<Void, Never>?
    /// The mode the current loop runs in.
    private var loopMode: FeedUpdates.Mode?

    init(
        requester: Requester, storage: any HubClientStorage, key: String, endpointID: String,
        configuration: HubClient.Configuration, registrations: Broadcast<RegistrationState>, session: URLSession
    ) {
        self.requester = requester
        self.storage = storage
        self.key = key
        self.endpointID = endpointID
        self.configuration = configuration
        self.registrations = registrations
        self.session = session
        position =
            storage.data(forKey: key).flatMap { try? JSONDecoder().decode(Position.self, from: $0) } ?? Position()
    }

    // MARK: Subscribers

    func subscribe() -> AsyncThrowingStream<NotificationResource, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: NotificationResource.self)
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        registrationChanged()
        return stream
    }

    private func unsubscribe(_ id: UUID) {
        subscribers[id] = nil
        if subscribers.isEmpty { stopLoop() }
    }

    private func stopLoop() {
        loop?.cancel()
        loop = nil
        loopMode = nil
    }

    /// Ends every iteration with `error`.
    private func fail(_ error: any Error) {
        for continuation in subscribers.values { continuation.finish(throwing: error) }
        subscribers.removeAll()
        stopLoop()
    }

    /// Starts or stops the update loop after subscribers or the registration changed.
    func registrationChanged() {
        guard !subscribers.isEmpty else { return }
        let mode = effectiveMode
        if loop != nil && loopMode == mode { return }
        stopLoop()
        loopMode = mode
        loop = Task { await self.run(mode) }
    }

    /// The mode ``HubClient/Configuration/feedUpdates`` resolves to for the current registration.
    private var effectiveMode: FeedUpdates.Mode {
        guard configuration.feedUpdates == .automatic else { return configuration.feedUpdates.mode }
        let transport = registrations.value.endpoint?.transport
        return transport == nil || transport == .polling ? .longPolling : .shoulderTaps
    }

    // MARK: Syncing

    /// Who a sync hands its changes to, which decides whether they move the position.
    enum Audience {
        /// A caller that gets the changes back (``HubClient/handle(_:)``,
        /// ``UserNotificationReader/sync()``): they move the position, iterations or not.
        case caller
        /// The iterations of ``UserNotificationReader/changes`` only (the update loop): they move
        /// the position only when an iteration took them.
        case subscribers
    }

    /// The update loop fetched changes that no iteration took: the last one stopped while they
    /// were on their way. The loop ends; the position stays.
    struct NoIterationLeft: Error {}

    /// Fetches every change since the position, page by page, without waiting.
    /// - Parameter audience: who gets the changes; see ``Audience``.
    /// - Returns: the changes handed out.
    /// - Throws: ``HubClientError``; ``NoIterationLeft`` for ``Audience/subscribers`` when no
    ///   iteration is left to take a page.
    func syncNow(for audience: Audience = .caller) async throws -> [NotificationResource] {
        var handedOut: [NotificationResource] = []
        var more = true
        var restarted = false
        while more {
            let page: FeedPageResource
            do {
                page = try await fetchPage(wait: nil)
            } catch let error as HubClientError where error.code == .invalidCursor && !restarted {
                restarted = true
                restart()
                continue
            }
            handedOut += try apply(page.changes, cursor: page.cursor, for: audience)
            more = page.hasMore
        }
        return handedOut
    }

    /// One `GET …/me/feed` from the position.
    func fetchPage(wait: Duration?) async throws -> FeedPageResource {
        var request = HubRequest(method: "GET", path: ["me", "feed"])
        request.query.append(("limit", String(min(max(configuration.pageSize, 1), 1000))))
        if let cursor = position.cursor { request.query.append(("cursor", cursor)) }
        if let wait {
            request.query.append(("wait", String(Int(wait.components.seconds))))
            request.timeout = TimeInterval(wait.components.seconds) + 30
        }
        request.headers["X-Hub-Endpoint"] = endpointID
        return try await requester.send(request, as: FeedPageResource.self)
    }

    /// Hands out the changes newer than the position and moves the position to `cursor`.
    /// - Parameter audience: who gets the changes; for ``Audience/subscribers``, the position
    ///   stays when no iteration took them.
    /// - Returns: the changes handed out.
    /// - Throws: ``NoIterationLeft`` when the changes are for the subscribers and none took them
    ///   (the last iteration stopped while the page was on its way).
    func apply(
        _ changes: [NotificationResource], cursor: String?, for audience: Audience
    ) throws -> [NotificationResource] {
        let fresh = changes.filter { $0.changeVersion > position.version }
        guard let last = fresh.last else { return [] }
        var taken = false
        for continuation in subscribers.values {
            for change in fresh {
                // An iteration that ended (its removal from `subscribers` is still on its way)
                // takes nothing.
                if case .terminated = continuation.yield(change) { break }
                taken = true
            }
        }
        if audience == .subscribers && !taken { throw NoIterationLeft() }
        position = Position(cursor: cursor ?? position.cursor, version: last.changeVersion)
        save()
        return fresh
    }

    /// Forgets the position: the cursor is no longer valid (another user, a rotated hub key).
    private func restart() {
        position = Position()
        save()
    }

    /// Forgets the position (sign-out).
    func reset() {
        restart()
    }

    private func save() {
        // A failed save costs at most replaying changes after a restart; the position in memory
        // stays right, and the next change saves again.
        try? storage.setData(try JSONEncoder().encode(position), forKey: key)
    }

    // MARK: The update loop

    private func run(_ mode: FeedUpdates.Mode) async {
        var failures = 0
        while !Task.isCancelled && !subscribers.isEmpty {
            do {
                if mode == .shoulderTaps {
                    // Catch up once; taps bring the rest.
                    _ = try await syncNow(for: .subscribers)
                    return
                } else if mode == .serverSentEvents {
                    try await streamEvents()
                } else {
                    _ = try await longPoll()
                }
                failures = 0
            } catch {
                guard await handle(error, failures: &failures) else { return }
            }
        }
    }

    /// Long-polls until a page comes back, then hands out its changes and any pages after it to
    /// the iterations.
    /// - Throws: ``HubClientError``; ``NoIterationLeft`` when no iteration is left to take a page.
    func longPoll() async throws -> [NotificationResource] {
        let page = try await fetchPage(wait: configuration.longPollWait)
        var handedOut = try apply(page.changes, cursor: page.cursor, for: .subscribers)
        if page.hasMore { handedOut += try await syncNow(for: .subscribers) }
        return handedOut
    }

    /// Decides what a failed sync means for the loop.
    /// - Returns: whether to keep looping (after a back-off delay for transient errors).
    private func handle(_ error: any Error, failures: inout Int) async -> Bool {
        if error is CancellationError || Task.isCancelled { return false }
        if error is NoIterationLeft {
            // The iterations that ended are leaving; one that starts later needs a loop of its own.
            stopLoop()
            return false
        }
        guard let error = error as? HubClientError else {
            fail(error)
            return false
        }
        if error.code == .invalidCursor {
            restart()
            return true  // sync again at once, from the start of the feed
        }
        guard error.isTransient else {
            fail(error)
            return false
        }
        failures += 1
        let delay = error.retryAfter ?? backoff(after: failures)
        do { try await Task.sleep(for: delay) } catch { return false }
        return true
    }

    /// The delay after `failures` failures in a row: doubling from the initial delay, capped,
    /// with ±20 % jitter.
    private func backoff(after failures: Int) -> Duration {
        let base = configuration.initialRetryDelay * (1 << min(failures - 1, 16))
        let capped = min(base, configuration.maximumRetryDelay)
        return capped * Double.random(in: 0.8...1.2)
    }
}
