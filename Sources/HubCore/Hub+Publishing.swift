import Foundation

/// Publishing: one notification for one user, or a batch (the path broadcast chunks take too).
extension Hub {
    /// Stores a notification for a user and enqueues its taps; durable when this returns.
    /// Republishing the same `appNotificationId` updates it (`created == false`).
    public func publish(
        app appID: String, user userID: String, _ draft: NotificationDraft
    ) async throws -> (notification: UserNotification, created: Bool) {
        let app = try app(appID)
        let now = now()
        let request = try publishRequest(app: app, user: userID, draft, now: now, handOff: dispatcher.handOff(at: now))
        let result = try await store.publish(request)
        await published([(request, result)], app: app, at: now)
        return (result.notification, result.created)
    }

    /// One item of a batch publish (``publish(app:batch:)``): a user and what to publish for them.
    public struct BatchItem: Sendable {
        /// The user the notification is for.
        public var userId: String
        /// The publish body, as for a single publish.
        public var draft: NotificationDraft

        /// An item publishing `draft` for `userId`.
        public init(userId: String, draft: NotificationDraft) {
            self.userId = userId
            self.draft = draft
        }
    }

    /// The outcome of one item of a batch publish: the stored notification and whether it was
    /// created, or why the item was refused (nothing of a refused item is stored).
    public typealias BatchOutcome = Result<(notification: UserNotification, created: Bool), HubError>

    /// Publishes many notifications of one app, each item exactly as ``publish(app:user:_:)``
    /// would, with its own outcome: an invalid item is refused on its own (its ``HubError`` names
    /// the field) and the others are stored. The valid items are written together
    /// (``FeedStore/publish(batch:)``: as few transactions as the store allows) and are durable
    /// when this returns; items are idempotent by `(userId, appNotificationId)` like single
    /// publishes, and a later item for the same notification updates an earlier one.
    ///
    /// - Parameters:
    ///   - appID: the configured app.
    ///   - items: the notifications to publish, in order.
    /// - Returns: one outcome per item, in item order.
    /// - Throws: ``HubError`` `not-found` for an unknown app; the store's error when the batch
    ///   could not be written (then none of it is known to be stored).
    public func publish(app appID: String, batch items: [BatchItem]) async throws -> [BatchOutcome] {
        try await publish(try prepareBatch(app: appID, items))
    }

    /// A batch publish validated, ready for its store write: ``prepareBatch(app:_:)``, then
    /// ``publish(_:)``. A broadcast validates its next part while the one before is written.
    struct PreparedBatch: Sendable {
        let app: CrossDeviceApp
        let now: Date
        /// The refused items' outcomes; `nil` for the items of `requests`.
        var outcomes: [BatchOutcome?]
        let requests: [PublishRequest]
        /// The item index of each request.
        let indices: [Int]
    }

    /// Validates the items of a batch publish (the first half of ``publish(app:batch:)``).
    /// - Throws: ``HubError`` `not-found` for an unknown app.
    func prepareBatch(app appID: String, _ items: [BatchItem]) throws -> PreparedBatch {
        let app = try app(appID)
        let now = now()
        let handOff = dispatcher.handOff(at: now)
        var outcomes: [BatchOutcome?] = Array(repeating: nil, count: items.count)
        var requests: [PublishRequest] = []
        var indices: [Int] = []
        requests.reserveCapacity(items.count)
        indices.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            do throws(HubError) {
                requests.append(try publishRequest(app: app, user: item.userId, item.draft, now: now, handOff: handOff))
                indices.append(index)
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        return PreparedBatch(app: app, now: now, outcomes: outcomes, requests: requests, indices: indices)
    }

    /// Writes a prepared batch and hands its deliveries on (the second half of
    /// ``publish(app:batch:)``).
    func publish(_ batch: PreparedBatch) async throws -> [BatchOutcome] {
        var outcomes = batch.outcomes
        if !batch.requests.isEmpty {
            let results = try await store.publish(batch: batch.requests)
            precondition(
                results.count == batch.requests.count, "a store's publish(batch:) answers one result per request")
            await published(Array(zip(batch.requests, results)), app: batch.app, at: batch.now)
            for (index, result) in zip(batch.indices, results) {
                outcomes[index] = .success((result.notification, result.created))
            }
        }
        return outcomes.map { $0! }
    }

    /// A validated publish of `draft` for `userID`, as the store takes it.
    /// - Throws: ``HubError`` `invalid-request` (every field error) or `payload-too-large`.
    func publishRequest(
        app: CrossDeviceApp, user userID: String, _ draft: NotificationDraft, now: Date, handOff: HandOff?
    ) throws(HubError) -> PublishRequest {
        let errors = validate(draft, for: app, userID: userID, now: now)
        if let tooLarge = payloadSizeError(draft.payload), errors == [tooLarge] {
            throw HubError(.payloadTooLarge, "The payload \(tooLarge.message).", fieldErrors: errors)
        }
        if !errors.isEmpty { throw HubError.invalid(errors) }
        let mode = draft.deliveryMode ?? app.delivery.mode
        // The lifetime of a scheduled notification counts from its release.
        let start = draft.scheduledDateTime.map { max($0, now) } ?? now
        return PublishRequest(
            key: FeedKey(appId: app.id, userId: userID), draft: draft, newId: RandomID.make(),
            expirationDateTime: draft.expirationDateTime
                ?? start.addingTimeInterval(configuration.defaultLifetime.seconds),
            deliveryMode: mode, now: now, planner: planner, handOff: handOff)
    }

    /// After publishes committed: counts them, gives the handed-off deliveries to the lanes,
    /// schedules the releases of scheduled ones, wakes the feeds' waiters and pokes the dispatcher
    /// once if any left deliveries for a claim.
    func published(
        _ stored: [(request: PublishRequest, result: PublishResult)], app: CrossDeviceApp, at now: Date
    ) async {
        var handedOff: [ClaimedDelivery] = []
        var leftForClaim = false
        for (request, result) in stored {
            accumulator.published(app: app.id, at: now)
            handedOff.append(contentsOf: result.handedOff)
            if result.notification.status == .scheduled {
                releases.expect(result.notification.scheduledDateTime)
            } else {
                leftForClaim = leftForClaim || result.leftForClaim != 0
                await changed(
                    request.key, version: result.notification.changeVersion, targeting: request.draft.targetPolicy,
                    pokeDispatcher: false)
            }
        }
        dispatcher.accept(handedOff)
        if leftForClaim { dispatcher.poke() }
        if stored.count == 1, let notification = stored.first?.result.notification {
            logger.debug("published", metadata: ["app": "\(app.id)", "notification": "\(notification.id)"])
        } else {
            logger.debug("published a batch", metadata: ["app": "\(app.id)", "count": "\(stored.count)"])
        }
    }
}
