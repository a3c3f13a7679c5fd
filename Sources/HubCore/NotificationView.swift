public import struct Foundation.Date

/// What one reader is shown of a user's stored notifications, as of one instant: the one place
/// that decides what feeds, history and single reads serve.
///
/// - **Time.** Expiry is exact at read time: an `active` notification past its
///   `expirationDateTime` reads as `expired` even before the sweep has marked it (the sweep only
///   reclaims space and taps the devices).
/// - **Content.** Tombstones (`expired`, `deleted`) carry no payload: content is never served
///   after expiry or deletion.
/// - **Platform.** A device reads only what targets its platform (`targetPolicy`), as only
///   those devices are tapped; a reader without a platform (the publisher, a device that does not
///   name its endpoint) sees every notification.
public struct NotificationView: Sendable, Hashable {
    public var now: Date
    /// The reading device's platform; `nil` reads the user's notifications of every platform.
    public var platform: Platform?

    public init(now: Date, platform: Platform? = nil) {
        self.now = now
        self.platform = platform
    }

    /// Whether the reader sees `notification` at all.
    public func shows(_ notification: UserNotification) -> Bool {
        guard let platform else { return true }
        return notification.targetPolicy.includes(platform)
    }

    /// `notification` as the reader sees it now.
    public func render(_ notification: UserNotification) -> UserNotification {
        var shown = notification
        if shown.status == .active && shown.expirationDateTime <= now { shown.status = .expired }
        if shown.status != .active { shown.payload = NotificationPayload() }
        return shown
    }

    /// The changes of `page` the reader sees, rendered; the cursor still moves past the hidden ones.
    public func page(_ page: FeedPage) -> FeedPage {
        FeedPage(changes: page.changes.filter(shows).map(render), version: page.version, hasMore: page.hasMore)
    }

    /// The notifications of a history query the reader sees, rendered, that still match `filter`'s
    /// states once rendered (a store that does not apply ``HistoryFilter/asOf`` may return an
    /// `active` row that has just expired).
    public func history(_ notifications: [UserNotification], filter: HistoryFilter) -> [UserNotification] {
        notifications.lazy.filter(shows).map(render).filter { shown in
            (filter.status.map { shown.status == $0 } ?? true)
                && (filter.readState.map { shown.readState == $0 } ?? true)
                && (filter.userActionState.map { shown.userActionState == $0 } ?? true)
        }
    }
}
