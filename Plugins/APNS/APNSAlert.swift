import HubCore

/// The `alert` dictionary of a visible notification (PROVIDERS.md §1.4).
///
/// ```swift
/// var alert = APNSAlert(title: "Meeting moved", body: "Now at 3 pm in room 4")
/// alert.subtitle = "Design review"
/// ```
public struct APNSAlert: Sendable, Hashable {
    public var title: String?
    public var subtitle: String?
    /// The text the transport trims first, by the hub's one rule (`VisibleTextFit`), when the
    /// payload is too large; the title is trimmed after it.
    public var body: String?
    /// `launch-image`: the image shown while the app launches from this notification.
    public var launchImage: String?
    /// `title-loc-key` and `title-loc-args`: a localized title from the app's strings files.
    public var titleLocalization: APNSLocalizedText?
    /// `subtitle-loc-key` and `subtitle-loc-args`.
    public var subtitleLocalization: APNSLocalizedText?
    /// `loc-key` and `loc-args`: a localized body.
    public var bodyLocalization: APNSLocalizedText?
    /// `action-loc-key`: legacy, no longer in Apple's table but still honoured by older systems.
    public var actionLocalizationKey: String?

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
        titleLocalization: APNSLocalizedText? = nil, subtitleLocalization: APNSLocalizedText? = nil,
        bodyLocalization: APNSLocalizedText? = nil, actionLocalizationKey: String? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocalization = titleLocalization
        self.subtitleLocalization = subtitleLocalization
        self.bodyLocalization = bodyLocalization
        self.actionLocalizationKey = actionLocalizationKey
    }

    /// Whether the dictionary would be empty (an alert that shows nothing).
    public var isEmpty: Bool {
        title == nil && subtitle == nil && body == nil && launchImage == nil && titleLocalization == nil
            && subtitleLocalization == nil && bodyLocalization == nil && actionLocalizationKey == nil
    }

    /// Writes the dictionary with `title` and `body` in place of ``title`` and ``body``.
    func write(to writer: inout JSONWriter, title: String?, body: String?) {
        writer.beginObject()
        func put(_ key: String, _ value: String?) {
            guard let value else { return }
            writer.key(key)
            writer.string(value)
        }
        func put(_ key: String, _ values: [String]) {
            guard !values.isEmpty else { return }
            writer.key(key)
            try? writer.value(.array(values.map(APNSJSON.string)))
        }
        put("title", title)
        put("subtitle", subtitle)
        put("body", body)
        put("launch-image", launchImage)
        put("title-loc-key", titleLocalization?.key)
        put("title-loc-args", titleLocalization?.arguments ?? [])
        put("subtitle-loc-key", subtitleLocalization?.key)
        put("subtitle-loc-args", subtitleLocalization?.arguments ?? [])
        put("loc-key", bodyLocalization?.key)
        put("loc-args", bodyLocalization?.arguments ?? [])
        put("action-loc-key", actionLocalizationKey)
        writer.endObject()
    }
}

/// A key of the app's `Localizable.strings` and the values for its `%@` placeholders.
public struct APNSLocalizedText: Sendable, Hashable {
    public var key: String
    public var arguments: [String]
    public init(key: String, arguments: [String] = []) {
        self.key = key
        self.arguments = arguments
    }
}

/// The `sound` of a visible notification: a sound file's name, or a critical alert's dictionary.
public struct APNSSound: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case named(String)
        case critical(name: String, volume: Double)
    }
    let kind: Kind

    /// The system's default sound.
    public static let `default` = APNSSound(kind: .named("default"))
    /// A sound file in the app bundle or `Library/Sounds`.
    public static func named(_ name: String) -> APNSSound { APNSSound(kind: .named(name)) }
    /// A critical alert's sound (`{critical: 1, name, volume}`); needs Apple's critical-alerts
    /// entitlement. `volume` is clamped to 0…1.
    public static func critical(name: String = "default", volume: Double = 1) -> APNSSound {
        APNSSound(kind: .critical(name: name, volume: min(1, max(0, volume))))
    }

    func write(to writer: inout JSONWriter) throws(APNSError) {
        switch kind {
        case .named(let name):
            writer.string(name)
        case .critical(let name, let volume):
            writer.beginObject()
            writer.key("critical")
            writer.integer(1)
            writer.key("name")
            writer.string(name)
            writer.key("volume")
            try writer.number(volume)
            writer.endObject()
        }
    }
}

/// The `interruption-level` of a visible notification (iOS 15+).
public struct APNSInterruptionLevel: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Added to the notification list without lighting the screen or playing a sound.
    public static let passive = APNSInterruptionLevel(rawValue: "passive")
    /// The default: shown and heard at once.
    public static let active = APNSInterruptionLevel(rawValue: "active")
    /// Breaks through Focus; needs the time-sensitive capability.
    public static let timeSensitive = APNSInterruptionLevel(rawValue: "time-sensitive")
    /// Breaks through Focus and the mute switch; needs Apple's critical-alerts entitlement.
    public static let critical = APNSInterruptionLevel(rawValue: "critical")
    public var description: String { rawValue }
}
