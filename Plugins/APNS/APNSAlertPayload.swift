import HubCore

/// A visible notification: the alert plus the other `aps` keys Apple defines for it (PROVIDERS.md §1.4).
///
/// ```swift
/// var payload = APNSAlertPayload(alert: APNSAlert(title: "Build failed", body: "main · 3 tests"))
/// payload.sound = .default
/// payload.threadID = "ci"
/// payload.interruptionLevel = .timeSensitive
/// payload.custom["build"] = 1742
/// ```
public struct APNSAlertPayload: Sendable, Hashable {
    public var alert: APNSAlert
    /// The app icon's badge; `0` clears it.
    public var badge: Int?
    public var sound: APNSSound?
    /// `thread-id`: groups notifications on the device.
    public var threadID: String?
    /// `category`: a registered `UNNotificationCategory` identifier (for actions).
    public var category: String?
    /// `content-available: 1`: also wake the app in the background.
    public var contentAvailable: Bool
    /// `mutable-content: 1`: route through the app's notification service extension.
    public var mutableContent: Bool
    /// `target-content-id`: the window or content to bring forward when opened.
    public var targetContentID: String?
    public var interruptionLevel: APNSInterruptionLevel?
    /// `relevance-score`, 0…1: how the system ranks it in a notification summary.
    public var relevanceScore: Double?
    /// `filter-criteria`: the Focus filter this notification matches.
    public var filterCriteria: String?
    /// Keys beside `aps`, for the app to read. `aps` itself is reserved.
    public var custom: [String: APNSJSON]

    public init(
        alert: APNSAlert, badge: Int? = nil, sound: APNSSound? = nil, threadID: String? = nil,
        category: String? = nil, contentAvailable: Bool = false, mutableContent: Bool = false,
        targetContentID: String? = nil, interruptionLevel: APNSInterruptionLevel? = nil,
        relevanceScore: Double? = nil, filterCriteria: String? = nil, custom: [String: APNSJSON] = [:]
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.filterCriteria = filterCriteria
        self.custom = custom
    }

    /// Writes `"aps": {…}` with `title` and `body` as the alert's title and body.
    func writeAPS(to writer: inout JSONWriter, title: String?, body: String?) throws(APNSError) {
        if alert.isEmpty && badge == nil && sound == nil {
            throw APNSError(
                .invalidPayload, "an alert push must show something: give an alert, a badge or a sound")
        }
        if let badge, badge < 0 {
            throw APNSError(.invalidPayload, "the badge must be 0 or more, not \(badge)")
        }
        if let relevanceScore, !(0...1).contains(relevanceScore) {
            throw APNSError(.invalidPayload, "relevance-score must be from 0 to 1, not \(relevanceScore)")
        }
        writer.key("aps")
        writer.beginObject()
        if !alert.isEmpty {
            writer.key("alert")
            alert.write(to: &writer, title: title, body: body)
        }
        if let badge {
            writer.key("badge")
            writer.integer(badge)
        }
        if let sound {
            writer.key("sound")
            try sound.write(to: &writer)
        }
        func put(_ key: String, _ value: String?) {
            guard let value else { return }
            writer.key(key)
            writer.string(value)
        }
        put("thread-id", threadID)
        put("category", category)
        if contentAvailable {
            writer.key("content-available")
            writer.integer(1)
        }
        if mutableContent {
            writer.key("mutable-content")
            writer.integer(1)
        }
        put("target-content-id", targetContentID)
        put("interruption-level", interruptionLevel?.rawValue)
        if let relevanceScore {
            writer.key("relevance-score")
            try writer.number(relevanceScore)
        }
        put("filter-criteria", filterCriteria)
        writer.endObject()
    }
}
