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
///   those devices are tapped; a device that does not name its endpoint, and the publisher, see
///   every platform's.
/// - **Schedule.** Devices never see a `scheduled` notification, nor the tombstone of one
///   cancelled before its time; the publisher sees both.
public struct NotificationView: Sendable, Hashable {
    /// Who reads.
    public enum Reader: Sendable, Hashable {
        /// The app server (publisher routes).
        case publisher
        /// A device of `platform` (`nil`: one that does not name its endpoint).
        case device(Platform?)
    }

    public var now: Date
    public var reader: Reader

    public init(now: Date, reader: Reader) {
        self.now = now
        self.reader = reader
    }

    /// The reading device's platform, if it named one.
    public var platform: Platform? {
        if case .device(let platform) = reader { platform } else { nil }
    }

    /// Whether the reader sees `notification` at all.
    public func shows(_ notification: UserNotification) -> Bool {
        guard case .device(let platform) = reader else { return true }
        if notification.status == .scheduled || Self.cancelledBeforeRelease(notification) { return false }
        return platform.map(notification.targetPolicy.includes) ?? true
    }

    /// Whether `notification` was deleted while it was still scheduled (devices never saw it).
    public static func cancelledBeforeRelease(_ notification: UserNotification) -> Bool {
        guard notification.status == .deleted, let scheduled = notification.scheduledDateTime else { return false }
        return scheduled > notification.lastModifiedDateTime
    }

    /// `notification` as the reader sees it now.
    public func render(_ notification: UserNotification) -> UserNotification {
        var shown = notification
        if shown.status == .active && shown.expirationDateTime <= now { shown.status = .expired }
        if shown.status != .active && shown.status != .scheduled { shown.payload = NotificationPayload() }
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
