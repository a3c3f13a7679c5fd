public import Foundation
public import HubCore
import Yams

extension ConfigReader {
    mutating func readCredentials(_ node: Node, at path: String, platforms: [Platform: [String]]) -> PushCredentials {
        var credentials = PushCredentials()
        guard let entries = mapping(node, at: path, allowed: ["apns", "fcm", "wns"]) else { return credentials }
        let needs: [(String, Platform)] = [("apns", .ios), ("fcm", .android), ("wns", .windows)]
        for (provider, platform) in needs where entries[provider] != nil && platforms[platform] == nil {
            error(
                entries.keys[provider],
                "'\(path).\(provider)' is given but the app does not select the \(platform) platform; add platforms.\(platform) or remove these credentials"
            )
        }
        if let apns = entries["apns"] { credentials.apns = readAPNS(apns, at: "\(path).apns") }
        if let fcm = entries["fcm"] { credentials.fcm = readFCM(fcm, at: "\(path).fcm") }
        if let wns = entries["wns"] { credentials.wns = readWNS(wns, at: "\(path).wns") }
        return credentials
    }

    mutating func readAPNS(_ node: Node, at path: String) -> APNSCredentials? {
        let allowed = ["teamId", "keyId", "privateKey", "certificate", "password", "environment"]
        guard let entries = mapping(node, at: path, allowed: allowed) else { return nil }
        var environment = APNSEnvironment.production
        if let text = choice(entries["environment"], at: "\(path).environment", APNSEnvironment.known.map(\.rawValue)) {
            environment = APNSEnvironment(rawValue: text)
        }
        if entries["privateKey"] != nil && entries["certificate"] != nil {
            error(node, "'\(path)' takes a .p8 token key (privateKey) or a .p12 certificate, not both")
            // Still check every reference, so that every problem of the file shows at once.
            _ = secret(entries["privateKey"], at: "\(path).privateKey", inline: false)
            _ = secret(entries["certificate"], at: "\(path).certificate", inline: false, binary: true)
            _ = secret(entries["password"], at: "\(path).password")
            return nil
        }
        if let certificate = entries["certificate"] {
            let p12 = secret(certificate, at: "\(path).certificate", inline: false, binary: true)
            let password = secret(entries["password"], at: "\(path).password")
            guard let p12 else { return nil }
            return APNSCredentials(authentication: .certificate(p12: p12, password: password), environment: environment)
        }
        guard entries["privateKey"] != nil else {
            error(node, "'\(path)' needs privateKey: file:AuthKey.p8 with keyId and teamId, or certificate: file:….p12")
            return nil
        }
        for key in ["keyId", "teamId"] where entries[key] == nil {
            error(node, "'\(path)' is missing '\(key)' (10 characters, from the Apple developer account)")
        }
        let keyID = string(entries["keyId"], at: "\(path).keyId")
        let teamID = string(entries["teamId"], at: "\(path).teamId")
        for (name, value) in [("keyId", keyID), ("teamId", teamID)] {
            if let value, value.count != 10 || !value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                error(entries[name], "'\(path).\(name)' must be 10 letters or digits, not '\(value)'")
            }
        }
        guard let key = secret(entries["privateKey"], at: "\(path).privateKey", inline: false) else { return nil }
        if let problem = CredentialCheck.p8Problem(key.reveal()) {
            error(entries["privateKey"], "'\(path).privateKey' (\(key.source)) \(problem)")
            return nil
        }
        guard let keyID, let teamID else { return nil }
        return APNSCredentials(
            authentication: .token(keyID: keyID, teamID: teamID, privateKey: key), environment: environment)
    }

    mutating func readFCM(_ node: Node, at path: String) -> FCMCredentials? {
        guard let entries = mapping(node, at: path, allowed: ["serviceAccount"], required: ["serviceAccount"]),
            let account = secret(entries["serviceAccount"], at: "\(path).serviceAccount", inline: false)
        else { return nil }
        switch FCMCredentials.parse(serviceAccount: account.revealBytes(), source: account.source) {
        case .success(let credentials):
            return credentials
        case .failure(let problem):
            error(entries["serviceAccount"], "'\(path).serviceAccount' (\(account.source)) \(problem.message)")
            return nil
        }
    }

    mutating func readWNS(_ node: Node, at path: String) -> WNSCredentials? {
        let allowed = ["packageSid", "clientSecret", "tenantId", "clientId"]
        guard let entries = mapping(node, at: path, allowed: allowed) else { return nil }
        if entries["packageSid"] != nil {
            for key in ["tenantId", "clientId"] where entries[key] != nil {
                error(
                    entries.keys[key],
                    "'\(path)' takes packageSid (classic) or tenantId + clientId (Entra ID), not both")
            }
            let sid = string(entries["packageSid"], at: "\(path).packageSid")
            if let sid, let problem = WNSCredentials.packageSIDProblem(sid) { error(entries["packageSid"], problem) }
            guard entries["clientSecret"] != nil else {
                error(node, "'\(path)' is missing 'clientSecret' (the package's client secret, as env:NAME)")
                return nil
            }
            guard let secret = secret(entries["clientSecret"], at: "\(path).clientSecret"), let sid else { return nil }
            return WNSCredentials(authentication: .packageSID(sid: sid, secret: secret))
        }
        guard entries["tenantId"] != nil || entries["clientId"] != nil else {
            error(node, "'\(path)' needs packageSid + clientSecret, or tenantId + clientId + clientSecret")
            return nil
        }
        for key in ["tenantId", "clientId", "clientSecret"] where entries[key] == nil {
            error(node, "'\(path)' is missing '\(key)'")
        }
        let tenant = string(entries["tenantId"], at: "\(path).tenantId")
        let client = string(entries["clientId"], at: "\(path).clientId")
        let secret = secret(entries["clientSecret"], at: "\(path).clientSecret")
        guard let tenant, let client, let secret else { return nil }
        return WNSCredentials(authentication: .entra(tenantID: tenant, clientID: client, clientSecret: secret))
    }
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
        if let problem = CredentialCheck.rsaKeyProblem(pem) { return .failure(.init(message: problem)) }
        return .success(
            FCMCredentials(
                projectID: object["project_id"] as? String ?? "", clientEmail: object["client_email"] as? String ?? "",
                privateKeyID: object["private_key_id"] as? String,
                privateKey: Secret(pem, source: "\(source)#private_key"),
                tokenURI: object["token_uri"] as? String ?? ""))
    }
}
