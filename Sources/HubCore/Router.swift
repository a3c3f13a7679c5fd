/// Maps a platform app ID to the one cross-device app that owns it, and an endpoint to its transport.
public struct Router: Sendable {
    public let apps: [String: CrossDeviceApp]
    private let owners: [Platform: [String: String]]
    private let transports: [TransportID: any Transport]

    /// - Throws: ``HubError`` when one platform app ID is mapped by two apps.
    public init(apps: [CrossDeviceApp], transports: [any Transport]) throws {
        var byID: [String: CrossDeviceApp] = [:]
        var owners: [Platform: [String: String]] = [:]
        for app in apps {
            if byID[app.id] != nil { throw HubError(.conflict, "The app '\(app.id)' is configured twice.") }
            byID[app.id] = app
            for (platform, ids) in app.platforms {
                for id in ids {
                    if let other = owners[platform]?[id] {
                        throw HubError(
                            .conflict,
                            "The \(platform.appIDKind) '\(id)' is mapped by both '\(other)' and '\(app.id)'; keep it in one app."
                        )
                    }
                    owners[platform, default: [:]][id] = app.id
                }
            }
        }
        self.apps = byID
        self.owners = owners
        self.transports = Dictionary(transports.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The cross-device app that maps `appID` on `platform`.
    public func app(for platform: Platform, appID: String) -> CrossDeviceApp? {
        owners[platform]?[appID].flatMap { apps[$0] }
    }

    public func transport(_ id: TransportID) -> (any Transport)? { transports[id] }

    public var transportIDs: [TransportID] { transports.keys.sorted { $0.rawValue < $1.rawValue } }

    /// The enabled transports a device of `platform` may register with (each transport declares
    /// its ``Transport/platforms``).
    public func transports(for platform: Platform) -> [TransportID] {
        transportIDs.filter { transports[$0]?.serves(platform) == true }
    }

    /// Whether `transport` declares ``TransportCapabilities/wakesInProcess``: the hub wakes its
    /// endpoints itself.
    public func wakesInProcess(_ transport: TransportID) -> Bool {
        transports[transport]?.capabilities.contains(.wakesInProcess) ?? false
    }
}
