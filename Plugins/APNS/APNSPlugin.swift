public import HubCore
import JWTKit
import Logging

public import struct Foundation.Date

/// The APNs transport as a plugin: `transports.apns` in hub.yaml sets where APNs is and how the
/// transport talks to it, each app's `credentials.apns` its `.p8` key or `.p12` certificate.
///
/// ```yaml
/// transports:
///   apns: { server: "127.0.0.1:2197", trustRoots: emulator-ca.pem, timeout: 15s, maxConnections: 8 }
/// apps:
///   - credentials:
///       apns: { teamId: ABCDE12345, keyId: XYZ987ABCD, privateKey: file:AuthKey.p8, environment: production }
/// ```
public struct APNSPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .apns }
    public var platforms: Set<Platform> { [.ios] }

    public var settingKeys: [String] {
        [
            "server", "productionServer", "developmentServer", "trustRoots", "timeout", "connectTimeout",
            "maxConnections", "maxStreamsPerConnection",
        ]
    }

    public var credentialKeys: [String] { ["teamId", "keyId", "privateKey", "certificate", "password", "environment"] }

    /// Reads `transports.apns` into an ``APNSTransport/Configuration``:
    /// - `server`: `host:port` for both environments (an emulator); or `productionServer` and
    ///   `developmentServer` apart (Apple's by default);
    /// - `trustRoots`: a PEM file of the only certificate authorities trusted (an emulator's CA);
    /// - `timeout` (one send, default 15s), `connectTimeout` (10s), `maxConnections` per
    ///   credentials and environment (8), `maxStreamsPerConnection` (500).
    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.expectKeys(settingKeys) else { return nil }
        var configuration = APNSTransport.Configuration()
        if section.has("server") && (section.has("productionServer") || section.has("developmentServer")) {
            section.error(
                "'\(section.path)' takes server (both environments) or productionServer/developmentServer, not both")
        }
        if let server = section.hostPort("server") {
            configuration.production = .init(host: server.host, port: server.port)
            configuration.development = .init(host: server.host, port: server.port)
        }
        if let server = section.hostPort("productionServer") {
            configuration.production = .init(host: server.host, port: server.port)
        }
        if let server = section.hostPort("developmentServer") {
            configuration.development = .init(host: server.host, port: server.port)
        }
        if let path = section.filePath("trustRoots") { configuration.trustRoots = .pemFile(path) }
        if let timeout = section.duration("timeout") { configuration.requestTimeout = timeout }
        if let timeout = section.duration("connectTimeout") { configuration.connectTimeout = timeout }
        if let count = section.integer("maxConnections", in: 1...1024) { configuration.maxConnections = count }
        if let count = section.integer("maxStreamsPerConnection", in: 1...10_000) {
            configuration.maxStreamsPerConnection = count
        }
        return section.hasErrors ? nil : configuration
    }

    /// Reads one app's `credentials.apns`: `privateKey` (a `.p8` file) with `keyId` and `teamId`, or
    /// `certificate` (a `.p12` file) with its `password`; `environment` is the default of its
    /// endpoints (`production`).
    public func readCredentials(_ section: ConfigSection) -> (any TransportCredentials)? {
        let path = section.path
        guard section.expectKeys(credentialKeys) else { return nil }
        var environment = APNSEnvironment.production
        if let text = section.choice("environment", APNSEnvironment.known.map(\.rawValue)) {
            environment = APNSEnvironment(rawValue: text)
        }
        if section.has("privateKey") && section.has("certificate") {
            section.error("'\(path)' takes a .p8 token key (privateKey) or a .p12 certificate, not both")
            // Still check every reference, so that every problem of the file shows at once.
            _ = section.secret("privateKey", inline: false)
            _ = section.secret("certificate", inline: false, binary: true)
            _ = section.secret("password")
            return nil
        }
        if section.has("certificate") {
            let p12 = section.secret("certificate", inline: false, binary: true)
            let password = section.secret("password")
            guard let p12 else { return nil }
            return APNSCredentials(authentication: .certificate(p12: p12, password: password), environment: environment)
        }
        guard section.has("privateKey") else {
            section.error(
                "'\(path)' needs privateKey: file:AuthKey.p8 with keyId and teamId, or certificate: file:….p12")
            return nil
        }
        for key in ["keyId", "teamId"] where !section.has(key) {
            section.error("'\(path)' is missing '\(key)' (10 characters, from the Apple developer account)")
        }
        let keyID = section.string("keyId")
        let teamID = section.string("teamId")
        for (name, value) in [("keyId", keyID), ("teamId", teamID)] {
            if let value, value.count != 10 || !value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                section.error("'\(path).\(name)' must be 10 letters or digits, not '\(value)'", at: name)
            }
        }
        guard let key = section.secret("privateKey", inline: false) else { return nil }
        if let problem = APNSCredentials.p8Problem(key.reveal()) {
            section.error("'\(path).privateKey' (\(key.source)) \(problem)", at: "privateKey")
            return nil
        }
        guard let keyID, let teamID else { return nil }
        return APNSCredentials(
            authentication: .token(keyID: keyID, teamID: teamID, privateKey: key), environment: environment)
    }

    /// Signs a provider token with a `.p8` key and verifies it with the key's public half; a
    /// `.p12` must open with its password.
    public func checkCredentials(
        _ credentials: any TransportCredentials, settings: any Sendable, online: Bool
    ) async
        -> [String]
    {
        guard let credentials = credentials as? APNSCredentials else { return [] }
        switch credentials.authentication {
        case .token(let keyID, let teamID, let privateKey):
            do {
                _ = try await APNSCredentials.signToken(p8: privateKey.reveal(), keyID: keyID, teamID: teamID)
                return []
            } catch {
                return ["the APNs key \(privateKey.source) could not sign an ES256 token: \(error)"]
            }
        case .certificate:
            do {
                let configuration = settings as? APNSTransport.Configuration ?? .init()
                try APNSTransport(configuration: configuration, logger: Logger(label: "hub.apns.check"))
                    .validate(credentials)
                return []
            } catch {
                return ["the APNs certificate cannot be used: \(error.message)"]
            }
        }
    }

    /// The transport for the apps with `credentials.apns`; `nil` when none has.
    /// - Throws: when an app's `.p8` or `.p12` cannot be used, so `hub serve` stops with the reason.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        let apps = apps(in: context)
        guard !apps.isEmpty else { return nil }
        var configuration = context.settings(as: APNSTransport.Configuration.self, default: .init())
        configuration.now = context.now
        let transport = APNSTransport(configuration: configuration, logger: context.logger)
        for app in apps {
            guard let credentials = app.credentials.apns else { continue }
            do {
                try transport.validate(credentials)
            } catch {
                throw APNSError(.invalidCredentials, "app '\(app.id)': \(error.message)", underlying: error)
            }
        }
        context.logger.info(
            "apns transport enabled",
            metadata: [
                "apps": "\(apps.map(\.id).joined(separator: ","))",
                "production": "\(configuration.production)", "development": "\(configuration.development)",
            ])
        return transport
    }
}

extension APNSCredentials {
    /// Signs an APNs provider token (ES256, `kid` = key ID, `iss` = team ID) and verifies it with the
    /// key's public half.
    /// - Returns: the compact JWT.
    public static func signToken(
        p8: String, keyID: String, teamID: String, at now: Date = Date()
    ) async throws
        -> String
    {
        let key = try ES256PrivateKey(pem: p8)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        let token = try await keys.sign(CheckClaims(iss: IssuerClaim(value: teamID), iat: IssuedAtClaim(value: now)))
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: key.publicKey, kid: JWKIdentifier(string: keyID))
        _ = try await verifier.verify(token, as: CheckClaims.self)
        return token
    }

    private struct CheckClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
