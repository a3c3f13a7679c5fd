// `Platform` itself is HubWire's (shared with HubClient); what only the hub needs of it is here.

extension Platform {
    /// The most app IDs one cross-device app may map on one platform.
    public static let maxAppIDs = 10

    /// What the platform calls its app IDs, for messages ("bundle ID", "package name", …).
    public var appIDKind: String {
        switch self {
        case .ios: "bundle ID"
        case .android: "package name"
        case .windows: "package family name"
        case .web: "web origin"
        default: "app ID"
        }
    }
}
