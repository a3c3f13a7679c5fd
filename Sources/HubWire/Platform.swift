/// A device platform a cross-device app can run on.
///
/// A growing set: new platforms are new static members, so adding one is not a breaking change.
public struct Platform: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// iOS and iPadOS apps, identified by bundle ID; tapped through APNs.
    public static let ios = Platform(rawValue: "ios")
    /// Android apps, identified by package name; tapped through FCM.
    public static let android = Platform(rawValue: "android")
    /// Windows apps, identified by package family name; tapped through WNS.
    public static let windows = Platform(rawValue: "windows")
    /// Web apps, identified by origin.
    public static let web = Platform(rawValue: "web")

    /// Every platform the hub knows, in onboarding order.
    public static let known: [Platform] = [.ios, .android, .windows, .web]

    public var description: String { rawValue }
}
