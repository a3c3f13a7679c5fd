/// A WNS notification: exactly one of the four types, each with only the options WNS allows for it
/// (a tag exists on toasts and tiles, a cache policy on tiles, badges and raw notifications).
///
/// ```swift
/// let toast = WNSNotification.toast(WNSToast(title: "Lunch?", body: "At noon", tag: WNSTag(deriving: id)))
/// let tap = WNSNotification.raw(WNSRaw(bytes: Array(#"{"hub":"tap"}"#.utf8), cachePolicy: .cache))
/// ```
public enum WNSNotification: Sendable, Hashable {
    case toast(WNSToast)
    case tile(WNSTile)
    case badge(WNSBadge)
    case raw(WNSRaw)

    /// WNS refuses bodies larger than this many bytes (413).
    public static let payloadLimit = 5000

    /// The `X-WNS-Type` header value.
    public var type: String {
        switch self {
        case .toast: "wns/toast"
        case .tile: "wns/tile"
        case .badge: "wns/badge"
        case .raw: "wns/raw"
        }
    }

    /// The `Content-Type`: XML for toast, tile and badge; bytes for raw.
    public var contentType: String {
        if case .raw = self { return "application/octet-stream" }
        return "text/xml"
    }

    /// The request body.
    public var body: [UInt8] {
        switch self {
        case .toast(let toast): Array(toast.xml.utf8)
        case .tile(let tile): Array(tile.xml.utf8)
        case .badge(let badge): Array(badge.xml.utf8)
        case .raw(let raw): raw.bytes
        }
    }

    /// The type-specific headers: `X-WNS-Tag`, `X-WNS-Group`, `X-WNS-Cache-Policy`.
    var typeHeaders: [(String, String)] {
        var headers: [(String, String)] = []
        switch self {
        case .toast(let toast):
            if let tag = toast.tag { headers.append(("X-WNS-Tag", tag.value)) }
            if let group = toast.group { headers.append(("X-WNS-Group", group.value)) }
        case .tile(let tile):
            if let tag = tile.tag { headers.append(("X-WNS-Tag", tag.value)) }
            if let policy = tile.cachePolicy { headers.append(("X-WNS-Cache-Policy", policy.rawValue)) }
        case .badge(let badge):
            if let policy = badge.cachePolicy { headers.append(("X-WNS-Cache-Policy", policy.rawValue)) }
        case .raw(let raw):
            if let policy = raw.cachePolicy { headers.append(("X-WNS-Cache-Policy", policy.rawValue)) }
        }
        return headers
    }
}

/// A toast (`ToastGeneric`): a title, an optional body, and the arguments the app receives when the
/// user activates it.
public struct WNSToast: Sendable, Hashable {
    public var title: String
    public var body: String?
    /// Passed to the app on activation (`launch` attribute).
    public var launch: String?
    /// With ``group``, identifies the toast so a newer one replaces it.
    public var tag: WNSTag?
    public var group: WNSTag?

    public init(title: String, body: String? = nil, launch: String? = nil, tag: WNSTag? = nil, group: WNSTag? = nil) {
        self.title = title
        self.body = body
        self.launch = launch
        self.tag = tag
        self.group = group
    }

    /// The toast XML; every text is escaped.
    public var xml: String {
        let launchAttribute = launch.map { #" launch="\#(WNSXML.escape($0))""# } ?? ""
        let lines = [title] + (body.map { [$0] } ?? [])
        let texts = lines.map { "<text>\(WNSXML.escape($0))</text>" }.joined()
        return
            #"<toast\#(launchAttribute)><visual><binding template="ToastGeneric">\#(texts)</binding></visual></toast>"#
    }
}

/// A live tile update: up to three lines of text in an adaptive medium tile.
public struct WNSTile: Sendable, Hashable {
    /// One to three lines; more are dropped.
    public var lines: [String]
    public var tag: WNSTag?
    public var cachePolicy: WNSCachePolicy?

    public init(lines: [String], tag: WNSTag? = nil, cachePolicy: WNSCachePolicy? = nil) {
        self.lines = lines
        self.tag = tag
        self.cachePolicy = cachePolicy
    }

    public var xml: String {
        let texts = lines.prefix(3).map { "<text hint-wrap=\"true\">\(WNSXML.escape($0))</text>" }.joined()
        return #"<tile><visual><binding template="TileMedium">\#(texts)</binding></visual></tile>"#
    }
}

/// A badge: a number or a glyph on the app's tile.
public struct WNSBadge: Sendable, Hashable {
    public var value: WNSBadgeValue
    public var cachePolicy: WNSCachePolicy?

    public init(_ value: WNSBadgeValue, cachePolicy: WNSCachePolicy? = nil) {
        self.value = value
        self.cachePolicy = cachePolicy
    }

    public var xml: String { #"<badge value="\#(value.rawValue)"/>"# }
}

/// A badge value: ``number(_:)`` (1–99; 0 clears the badge) or one of the system glyphs.
public struct WNSBadgeValue: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A count, clamped to 0…99; 0 shows no badge.
    public static func number(_ count: Int) -> WNSBadgeValue {
        count <= 0 ? .none : WNSBadgeValue(rawValue: String(min(count, 99)))
    }
    public static let none = WNSBadgeValue(rawValue: "none")
    public static let activity = WNSBadgeValue(rawValue: "activity")
    public static let alarm = WNSBadgeValue(rawValue: "alarm")
    public static let alert = WNSBadgeValue(rawValue: "alert")
    public static let attention = WNSBadgeValue(rawValue: "attention")
    public static let available = WNSBadgeValue(rawValue: "available")
    public static let away = WNSBadgeValue(rawValue: "away")
    public static let busy = WNSBadgeValue(rawValue: "busy")
    public static let error = WNSBadgeValue(rawValue: "error")
    public static let newMessage = WNSBadgeValue(rawValue: "newMessage")
    public static let paused = WNSBadgeValue(rawValue: "paused")
    public static let playing = WNSBadgeValue(rawValue: "playing")
    public static let unavailable = WNSBadgeValue(rawValue: "unavailable")
}

/// A raw notification: bytes for the app, never shown by Windows.
public struct WNSRaw: Sendable, Hashable {
    public var bytes: [UInt8]
    /// `cache` keeps the newest raw notification for an offline device; WNS's default is `no-cache`.
    public var cachePolicy: WNSCachePolicy?

    public init(bytes: [UInt8], cachePolicy: WNSCachePolicy? = nil) {
        self.bytes = bytes
        self.cachePolicy = cachePolicy
    }
}

/// `X-WNS-Cache-Policy`: whether WNS keeps the notification while the device is offline.
public struct WNSCachePolicy: RawRepresentable, Sendable, Hashable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let cache = WNSCachePolicy(rawValue: "cache")
    public static let noCache = WNSCachePolicy(rawValue: "no-cache")
}
