public import HubCore

extension TransportID {
    /// The WNS transport.
    public static let wns = TransportID("wns")
}

extension PushCredentials {
    /// The app's `credentials.wns`.
    public var wns: WNSCredentials? {
        get { self[WNSCredentials.self] }
        set { self[WNSCredentials.self] = newValue }
    }
}

/// How the hub obtains WNS access tokens.
public struct WNSCredentials: TransportCredentials {
    public static let transport = TransportID.wns

    public enum Authentication: Sendable, Hashable {
        /// The classic Store flow: package SID (`ms-app://s-1-15-2-…`) and client secret.
        case packageSID(sid: String, secret: Secret)
        /// The Microsoft Entra ID flow of the Windows App SDK.
        case entra(tenantID: String, clientID: String, clientSecret: Secret)
    }

    public var authentication: Authentication

    public init(authentication: Authentication) { self.authentication = authentication }

    public var summary: String { kind }

    public var kind: String {
        switch authentication {
        case .packageSID: "package SID"
        case .entra: "Entra ID app"
        }
    }

    /// Checks the `ms-app://s-1-15-2-…` shape of a package SID.
    public static func packageSIDProblem(_ sid: String) -> String? {
        let lower = sid.lowercased()
        guard lower.hasPrefix("ms-app://s-1-15-2-") else {
            return "'\(sid)' is not a package SID: it must start with ms-app://s-1-15-2- (copy it from Partner Center)"
        }
        let tail = lower.dropFirst("ms-app://s-1-15-2-".count).split(separator: "-", omittingEmptySubsequences: false)
        if tail.isEmpty || tail.contains(where: { $0.isEmpty || !$0.allSatisfy(\.isNumber) }) {
            return "'\(sid)' is not a package SID: after ms-app://s-1-15-2- come numbers separated by hyphens"
        }
        return nil
    }
}
