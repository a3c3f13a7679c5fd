import Foundation

/// Declarative Web Push: a push message that is itself a notification, which the browser shows
/// without running a service worker (WebKit, Safari 18.4+ on iOS and iPadOS for Home Screen web
/// apps, 18.5+ on macOS; in the W3C Push API draft as the "declarative push message").
///
/// The shape the hub sends (see docs/transports.md for the rules and their sources):
///
/// ```json
/// {"web_push": 8030,
///  "notification": {"title": "Lunch?", "body": "12:30 at the usual place", "navigate": "https://notes.contoso.com/",
///                   "tag": "lunch", "data": {"hub": "visible", "app": "notes.contoso.com", "id": "…", "v": "42"}},
///  "app_badge": 3}
/// ```
///
/// - `web_push` must be the number 8030; without it a browser treats the message as a classic one.
/// - `notification.title` (a string) and `notification.navigate` (a URL, opened when the user
///   activates the notification) are required; a message without them is not declarative.
/// - `tag` replaces an earlier notification with the same tag, as `showNotification` does;
///   `data` is handed to a service worker, if the page has one, with the notification.
/// - `app_badge` (optional, a non-negative integer) sets the app icon's badge.
/// - `mutable` is left out (false): the browser shows the message as it is, and a service worker
///   that fails does not cost the subscription.
public struct DeclarativePushMessage: Sendable, Hashable {
    /// The value of `web_push` that marks a declarative message (an homage to RFC 8030).
    public static let magic = 8030

    public var title: String
    public var body: String?
    /// The absolute URL the browser opens when the notification is activated.
    public var navigate: String
    public var tag: String?
    /// What a service worker, if any, finds in the notification's `data`.
    public var data: [String: String]
    /// The app icon's badge count; `nil` leaves the badge alone.
    public var appBadge: Int?

    /// - Parameters:
    ///   - title: the notification's title (required, may be cut to fit).
    ///   - body: its body text.
    ///   - navigate: the absolute URL opened on activation.
    ///   - tag: replaces the shown notification with the same tag.
    ///   - data: what a service worker finds in the notification's `data`.
    ///   - appBadge: the badge count to set, if any.
    public init(
        title: String, body: String? = nil, navigate: String, tag: String? = nil, data: [String: String] = [:],
        appBadge: Int? = nil
    ) {
        self.title = title
        self.body = body
        self.navigate = navigate
        self.tag = tag
        self.data = data
        self.appBadge = appBadge
    }

    /// The message as JSON (keys sorted, slashes unescaped), with the body (then the title) cut by
    /// the hub's one rule (`VisibleTextFit`) when the whole would not fit one Web Push record.
    public var payload: [UInt8] {
        WebPushTransport.fitting(title: title, body: body) { title, body in
            var copy = self
            copy.title = title
            copy.body = body
            return copy.json
        }
    }

    /// The JSON of the message as it is, not fitted.
    var json: [UInt8] {
        var notification: [String: Any] = ["title": title, "navigate": navigate]
        if let body { notification["body"] = body }
        if let tag { notification["tag"] = tag }
        if !data.isEmpty { notification["data"] = data }
        var message: [String: Any] = ["web_push": Self.magic, "notification": notification]
        if let appBadge { message["app_badge"] = max(0, appBadge) }
        let data = try? JSONSerialization.data(
            withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes])
        return Array(data ?? Data("{}".utf8))
    }

    /// Where a web endpoint's notifications navigate: the root of its web origin (its platform app
    /// ID, `https://host[:port]`), or `nil` when the ID is not an http(s) origin.
    /// - Parameter origin: the endpoint's platform app ID.
    public static func navigateURL(origin: String) -> String? {
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else { return nil }
        return origin.hasSuffix("/") ? origin : origin + "/"
    }
}
