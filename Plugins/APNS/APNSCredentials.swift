public import HubCore
import JWTKit

extension TransportID {
    /// The APNs transport.
    public static let apns = TransportID("apns")
}

extension PushCredentials {
    /// The app's `credentials.apns`.
    public var apns: APNSCredentials? {
        get { self[APNSCredentials.self] }
        set { self[APNSCredentials.self] = newValue }
    }
}

extension Endpoint {
    /// The APNs environment the device token belongs to: the endpoint's `environment` attribute.
    public var apnsEnvironment: APNSEnvironment? {
        get { attributes[APNSEnvironment.attribute].map(APNSEnvironment.init(rawValue:)) }
        set { attributes[APNSEnvironment.attribute] = newValue?.rawValue }
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
    /// The endpoint attribute that holds it.
    public static let attribute = "environment"
    public var description: String { rawValue }
}

/// How the hub authenticates to APNs.
public struct APNSCredentials: TransportCredentials {
    public static let transport = TransportID.apns

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

    /// `token (.p8), production, key …, team …, from file:…`: the kind, the environment and the
    /// key's IDs and source, never the key.
    public var summary: String {
        var text = "\(kind), \(environment)"
        if case .token(let keyID, let teamID, let key) = authentication {
            text += ", key \(keyID), team \(teamID), from \(key.source)"
        }
        return text
    }

    /// `token` or `certificate`, for summaries.
    public var kind: String {
        switch authentication {
        case .token: "token (.p8)"
        case .certificate: "certificate (.p12)"
        }
    }
}

extension APNSCredentials {
    /// Why the `.p8` text is not an APNs token key (PEM PKCS#8 EC P-256), or `nil` when it is.
    public static func p8Problem(_ pem: String) -> String? {
        guard pem.contains("-----BEGIN PRIVATE KEY-----") || pem.contains("-----BEGIN EC PRIVATE KEY-----") else {
            return "is not a PEM private key; use the AuthKey_XXXXXXXXXX.p8 file downloaded from Apple"
        }
        do {
            _ = try ES256PrivateKey(pem: pem)
            return nil
        } catch {
            return "is not a P-256 (ES256) private key; APNs token keys are EC P-256 .p8 files"
        }
    }
}
