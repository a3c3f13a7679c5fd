public import Foundation
public import HubCore
import JWTKit

extension TransportID {
    /// The FCM transport.
    public static let fcm = TransportID("fcm")
}

extension PushCredentials {
    /// The app's `credentials.fcm`.
    public var fcm: FCMCredentials? {
        get { self[FCMCredentials.self] }
        set { self[FCMCredentials.self] = newValue }
    }
}

/// A Google service account able to send through FCM HTTP v1.
public struct FCMCredentials: TransportCredentials {
    public static let transport = TransportID.fcm

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

    /// The service account, safe to print.
    public var summary: String { "service account \(clientEmail), project \(projectID)" }
}

/// Why a service-account key file cannot be used.
public struct ServiceAccountProblem: Error, Sendable {
    public var message: String
}

extension FCMCredentials {
    /// Parses a Google service-account JSON key file and checks its RSA key.
    public static func parse(
        serviceAccount bytes: [UInt8], source: String
    ) -> Result<FCMCredentials, ServiceAccountProblem> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            return .failure(.init(message: "is not JSON; download the key file of the service account"))
        }
        let required = ["client_email", "private_key", "token_uri", "project_id"]
        let missing = required.filter { ((object[$0] as? String) ?? "").isEmpty }
        if !missing.isEmpty {
            return .failure(
                .init(
                    message: "lacks \(missing.joined(separator: ", ")); download a new JSON key for the service account"
                ))
        }
        if let type = object["type"] as? String, type != "service_account" {
            return .failure(.init(message: "has type '\(type)'; FCM needs a service_account key"))
        }
        let pem = object["private_key"] as? String ?? ""
        if let problem = FCMCredentials.rsaKeyProblem(pem) { return .failure(.init(message: problem)) }
        return .success(
            FCMCredentials(
                projectID: object["project_id"] as? String ?? "", clientEmail: object["client_email"] as? String ?? "",
                privateKeyID: object["private_key_id"] as? String,
                privateKey: Secret(pem, source: "\(source)#private_key"),
                tokenURI: object["token_uri"] as? String ?? ""))
    }
}

extension FCMCredentials {
    /// Why the PEM is not an RSA private key usable for RS256, or `nil`.
    public static func rsaKeyProblem(_ pem: String) -> String? {
        do {
            _ = try Insecure.RSA.PrivateKey(pem: pem)
            return nil
        } catch {
            return "private_key is not a PEM RSA private key; download a new key for the service account"
        }
    }

    /// Signs a Google OAuth assertion (RS256) with the service account's key and verifies it.
    /// - Returns: the compact JWT.
    public func signAssertion(at now: Date = Date()) async throws -> String {
        let key = try Insecure.RSA.PrivateKey(pem: privateKey.reveal())
        let kid = privateKeyID.map { JWKIdentifier(string: $0) }
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
        let claims = FCMAssertionClaims(
            iss: IssuerClaim(value: clientEmail), scope: FCMConfiguration.messagingScope,
            aud: AudienceClaim(value: tokenURI), iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(3600)))
        let token = try await keys.sign(claims, kid: kid)
        let verifier = JWTKeyCollection()
        await verifier.add(rsa: key.publicKey, digestAlgorithm: .sha256, kid: kid)
        let verified = try await verifier.verify(token, as: FCMAssertionClaims.self)
        try verified.exp.verifyNotExpired()
        return token
    }
}
