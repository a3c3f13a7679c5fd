/// Push credentials of one cross-device app, one optional set per provider.
public struct PushCredentials: Sendable, Hashable {
    public var apns: APNSCredentials?
    public var fcm: FCMCredentials?
    public var wns: WNSCredentials?

    public init(apns: APNSCredentials? = nil, fcm: FCMCredentials? = nil, wns: WNSCredentials? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.wns = wns
    }
}

/// The APNs server environment a device token belongs to.
public struct APNSEnvironment: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `api.push.apple.com`.
    public static let production = APNSEnvironment(rawValue: "production")
    /// `api.sandbox.push.apple.com`, for development builds.
    public static let development = APNSEnvironment(rawValue: "development")
    public static let known: [APNSEnvironment] = [.production, .development]
    public var description: String { rawValue }
}

/// How the hub authenticates to APNs.
public struct APNSCredentials: Sendable, Hashable {
    public enum Authentication: Sendable, Hashable {
        /// Token-based: an ES256 `.p8` key with its 10-character key ID and team ID.
        case token(keyID: String, teamID: String, privateKey: Secret)
        /// Certificate-based: a `.p12` bundle and its password.
        case certificate(p12: Secret, password: Secret?)
    }

    public var authentication: Authentication
    /// The environment used for endpoints that did not say theirs.
    public var environment: APNSEnvironment

    public init(authentication: Authentication, environment: APNSEnvironment = .production) {
        self.authentication = authentication
        self.environment = environment
    }

    /// `token` or `certificate`, for summaries.
    public var kind: String {
        switch authentication {
        case .token: "token (.p8)"
        case .certificate: "certificate (.p12)"
        }
    }
}

/// A Google service account able to send through FCM HTTP v1.
public struct FCMCredentials: Sendable, Hashable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String?
    public var privateKey: Secret
    public var tokenURI: String

    public init(projectID: String, clientEmail: String, privateKeyID: String?, privateKey: Secret, tokenURI: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.tokenURI = tokenURI
    }
}

/// How the hub obtains WNS access tokens.
public struct WNSCredentials: Sendable, Hashable {
    public enum Authentication: Sendable, Hashable {
        /// The classic Store flow: package SID (`ms-app://s-1-15-2-…`) and client secret.
        case packageSID(sid: String, secret: Secret)
        /// The Microsoft Entra ID flow of the Windows App SDK.
        case entra(tenantID: String, clientID: String, clientSecret: Secret)
    }

    public var authentication: Authentication

    public init(authentication: Authentication) { self.authentication = authentication }

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
