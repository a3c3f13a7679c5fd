/// What the device shows: a title and a body, plus what each platform derives from them.
///
/// `title` and `body` are the text every platform can show; with localisation keys they are the
/// fallback text (Windows and Web Push always show them). The app can render them itself after a
/// sync.
public struct VisualContent: Sendable, Hashable, Codable {
    public var title: String
    public var body: String?
    /// A key of the app's localised strings for the title (APNs `title-loc-key`, FCM
    /// `title_loc_key`); ``title`` is the fallback text.
    public var titleLocKey: String?
    /// The values for the placeholders of ``titleLocKey``, in order.
    public var titleLocArgs: [String]?
    /// A key of the app's localised strings for the body (APNs `loc-key`, FCM `body_loc_key`);
    /// ``body`` is the fallback text.
    public var bodyLocKey: String?
    /// The values for the placeholders of ``bodyLocKey``, in order.
    public var bodyLocArgs: [String]?
    /// The app icon's badge count (APNs `badge`, FCM `notification_count`, a WNS badge); `0` clears it.
    public var badge: Int?
    /// `true`: Windows endpoints also get a live tile update with the title and body.
    public var tile: Bool?

    public init(
        title: String, body: String? = nil, titleLocKey: String? = nil, titleLocArgs: [String]? = nil,
        bodyLocKey: String? = nil, bodyLocArgs: [String]? = nil, badge: Int? = nil, tile: Bool? = nil
    ) {
        self.title = title
        self.body = body
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgs = bodyLocArgs
        self.badge = badge
        self.tile = tile
    }
}

/// The content of a notification: an opaque string for the app, a visual, or both.
public struct NotificationPayload: Sendable, Hashable, Codable {
    public var rawContent: String?
    public var visualContent: VisualContent?
    public init(rawContent: String? = nil, visualContent: VisualContent? = nil) {
        self.rawContent = rawContent
        self.visualContent = visualContent
    }
}

/// Which of the user's platforms a notification targets; empty means all.
public struct TargetPolicy: Sendable, Hashable, Codable {
    public var platformTypes: [Platform]
    public init(platformTypes: [Platform] = []) { self.platformTypes = platformTypes }

    /// Whether `platform` is targeted.
    public func includes(_ platform: Platform) -> Bool { platformTypes.isEmpty || platformTypes.contains(platform) }

    private enum CodingKeys: String, CodingKey { case platformTypes }

    /// A missing `platformTypes` targets every platform (it is optional in the API).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        platformTypes = try container.decodeIfPresent([Platform].self, forKey: .platformTypes) ?? []
    }
}
