public import HubCore
import HubPolling
import Synchronization

extension Hub {
    /// A long-poll below HTTP, for tests of what wakes whom: reads the feed (unless `version` is
    /// already the newest this instance committed) and, when it found nothing, parks in the hub's
    /// waiting room (``FeedSignals/park(_:endpoint:after:timeout:_:)``, where the server parks its
    /// long-polls) until woken or `wait` passed, then reads again. Cancelling the task ends the
    /// wait without reading again. A hub without a waiting room (`signals` not a ``FeedSignals``)
    /// reads once.
    public func longPoll(
        app: String, user: String, after version: Int64, limit: Int = 100, wait: Duration,
        endpoint: String? = nil, platform: Platform? = nil
    ) async throws -> FeedPage {
        let read = {
            try await self.feed(
                app: app, user: user, after: version, limit: limit, endpoint: endpoint, platform: platform)
        }
        guard let room = waitingRoom else { return try await read() }
        let key = FeedKey(appId: app, userId: user)
        let ticket = room.ticket()
        if !room.isCurrent(key, version: version) {
            let page = try await read()
            if !page.changes.isEmpty { return page }
        }
        let parked = Mutex<(parking: FeedSignals.Parking?, resume: (@Sendable (Bool) -> Void)?)>((nil, nil))
        let woken = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let once = Mutex(Optional(continuation))
                let resume: @Sendable (Bool) -> Void = { woken in once.withLock { $0.take() }?.resume(returning: woken)
                }
                parked.withLock { $0.resume = resume }
                let parking = room.park(key, endpoint: endpoint, after: ticket, timeout: wait, resume)
                parked.withLock { $0.parking = parking }
                if Task.isCancelled, room.unpark(parking) { resume(false) }
            }
        } onCancel: {
            let (parking, resume) = parked.withLock { ($0.parking, $0.resume) }
            if let parking, room.unpark(parking) { resume?(false) }
        }
        if !woken && (Task.isCancelled || room.isShutDown) {
            return FeedPage(changes: [], version: version, hasMore: false)
        }
        return try await read()
    }
}
