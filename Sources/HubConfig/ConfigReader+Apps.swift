import Foundation
import HubCore
import Yams

extension ConfigReader {
    static let appKeys = [
        "id", "name", "platforms", "identity", "credentials", "domain", "publishers", "delivery", "rateLimits",
        "maxEndpointsPerUser", "dispatchWeight", "webhooks",
    ]

    mutating func readApps(_ node: Node) -> [CrossDeviceApp] {
        guard let items = sequence(node, at: "apps") else { return [] }
        var apps: [CrossDeviceApp] = []
        var appIDs: [String: Int] = [:]
        var owners: [Platform: [String: (app: String, mark: Mark?)]] = [:]
        for (index, item) in items.enumerated() {
            let path = "apps[\(index)]"
            guard let app = readApp(item, at: path) else { continue }
            if let first = appIDs[app.id] {
                error(item, "the app '\(app.id)' is configured twice (first at line \(first)); merge them")
                continue
            }
            appIDs[app.id] = item.mark?.line ?? 0
            // The router maps each platform app ID to exactly one app.
            if let entries = item.mapping, let platforms = entries["platforms"]?.mapping {
                for (platformNode, value) in platforms {
                    guard let platform = platformNode.scalar.map({ Platform(rawValue: $0.string) }),
                        let ids = value.mapping?["appIds"]?.sequence
                    else { continue }
                    for idNode in ids {
                        guard let id = idNode.scalar?.string else { continue }
                        if let owner = owners[platform]?[id], owner.app != app.id {
                            error(
                                idNode,
                                "the \(platform.appIDKind) '\(id)' is already mapped by the app '\(owner.app)' (line \(owner.mark?.line ?? 0)); a platform app ID belongs to exactly one app"
                            )
                        } else {
                            owners[platform, default: [:]][id] = (app.id, idNode.mark)
                        }
                    }
                }
            }
            apps.append(app)
        }
        return apps
    }

    mutating func readApp(_ node: Node, at path: String) -> CrossDeviceApp? {
        guard let entries = mapping(node, at: path, allowed: Self.appKeys, required: ["id", "platforms"]) else {
            return nil
        }
        let id = string(entries["id"], at: "\(path).id")
        if let id, let problem = DomainName.problem(id) {
            error(entries["id"], "'\(path).id' \(problem); the app ID is the app's domain")
        }
        let name = string(entries["name"], at: "\(path).name") ?? id ?? ""
        let platforms = entries["platforms"].map { readPlatforms($0, at: "\(path).platforms") } ?? [:]
        var app = CrossDeviceApp(id: id ?? "", name: name, platforms: platforms)
        if let identity = entries["identity"] { app.identity = readIdentity(identity, at: "\(path).identity") }
        if let credentials = entries["credentials"] {
            app.credentials = readCredentials(credentials, at: "\(path).credentials", platforms: platforms)
        }
        if let domain = entries["domain"] { app.domain = readDomain(domain, at: "\(path).domain") }
        if let publishers = entries["publishers"] {
            app.publishers = readPublishers(publishers, at: "\(path).publishers")
        }
        if let delivery = entries["delivery"],
            let sub = mapping(delivery, at: "\(path).delivery", allowed: ["mode", "badge"])
        {
            if let mode = choice(sub["mode"], at: "\(path).delivery.mode", DeliveryMode.known.map(\.rawValue)) {
                app.delivery.mode = DeliveryMode(rawValue: mode)
            }
            if let badge = choice(sub["badge"], at: "\(path).delivery.badge", BadgeSource.known.map(\.rawValue)) {
                app.delivery.badge = BadgeSource(rawValue: badge)
            }
        }
        app.maxEndpointsPerUser = integer(
            entries["maxEndpointsPerUser"], at: "\(path).maxEndpointsPerUser", in: Self.endpointLimits)
        if let weight = integer(entries["dispatchWeight"], at: "\(path).dispatchWeight", in: 1...100) {
            app.dispatchWeight = weight
        }
        if let webhooks = entries["webhooks"] { app.webhooks = readWebhooks(webhooks, at: "\(path).webhooks") }
        return id == nil ? nil : app
    }

    mutating func readPlatforms(_ node: Node, at path: String) -> [Platform: [String]] {
        let names = Platform.known.map(\.rawValue)
        guard let entries = mapping(node, at: path, allowed: names) else { return [:] }
        if entries.values.isEmpty { error(node, "'\(path)' lists no platform; add ios, android, windows or web") }
        var result: [Platform: [String]] = [:]
        for name in names {
            guard let value = entries[name] else { continue }
            let platform = Platform(rawValue: name)
            let here = "\(path).\(name)"
            guard let sub = mapping(value, at: here, allowed: ["appIds"], required: ["appIds"]),
                let items = sequence(sub["appIds"], at: "\(here).appIds")
            else { continue }
            if items.isEmpty {
                error(sub["appIds"], "'\(here).appIds' is empty; give at least one \(platform.appIDKind)")
            }
            var ids: [String] = []
            for (index, item) in items.enumerated() {
                guard let id = string(item, at: "\(here).appIds[\(index)]") else { continue }
                if index == Platform.maxAppIDs {
                    error(
                        item,
                        "'\(here).appIds' has more than \(Platform.maxAppIDs) app IDs; a platform maps at most \(Platform.maxAppIDs) — remove '\(id)' or map it in another app"
                    )
                }
                if let problem = platform.problem(withAppID: id) {
                    error(item, problem)
                } else if ids.contains(id) {
                    error(item, "'\(id)' is listed twice in '\(here).appIds'")
                } else {
                    ids.append(id)
                }
            }
            result[platform] = ids
        }
        return result
    }

    mutating func readIdentity(_ node: Node, at path: String) -> [IdentityRegistration] {
        guard let items = sequence(node, at: path) else { return [] }
        var registrations: [IdentityRegistration] = []
        for (index, item) in items.enumerated() {
            let here = "\(path)[\(index)]"
            let allowed = ["issuer", "audiences", "jwks", "secret", "userClaim"]
            guard let entries = mapping(item, at: here, allowed: allowed, required: ["issuer", "audiences"]) else {
                continue
            }
            let issuer = string(entries["issuer"], at: "\(here).issuer")
            var audiences: [String] = []
            if let list = entries["audiences"] {
                if case .scalar = list {
                    audiences = string(list, at: "\(here).audiences").map { [$0] } ?? []
                } else {
                    audiences = (sequence(list, at: "\(here).audiences") ?? []).enumerated().compactMap {
                        string($1, at: "\(here).audiences[\($0)]")
                    }
                }
                if audiences.isEmpty {
                    error(list, "'\(here).audiences' is empty; give the app registration's client ID")
                }
            }
            var keys: IdentityRegistration.KeySource?
            switch (entries["jwks"], entries["secret"]) {
            case (let jwks?, nil):
                keys = readJWKS(jwks, at: "\(here).jwks")
            case (nil, let secretNode?):
                keys = secret(secretNode, at: "\(here).secret").map { .secret($0) }
                if case .secret(let secret) = keys, let problem = SecretStrength.keyProblem(secret) {
                    error(
                        secretNode,
                        "'\(here).secret' \(problem) for HS256; use 32 random bytes or more (openssl rand -hex 32)")
                    keys = nil
                }
            case (let jwks?, let secretNode?):
                error(item, "'\(here)' takes jwks (RS256/ES256) or secret (HS256), not both")
                // Still check both references, so that every problem of the file shows at once.
                _ = readJWKS(jwks, at: "\(here).jwks")
                _ = secret(secretNode, at: "\(here).secret")
            case (nil, nil):
                error(item, "'\(here)' needs jwks: file:… or https://…, or secret: env:… for HS256 tokens")
            }
            let claim = string(entries["userClaim"], at: "\(here).userClaim") ?? "sub"
            if let issuer, let keys {
                registrations.append(
                    IdentityRegistration(issuer: issuer, audiences: audiences, keys: keys, userClaim: claim))
            }
        }
        return registrations
    }

    mutating func readJWKS(_ node: Node, at path: String) -> IdentityRegistration.KeySource? {
        guard let reference = string(node, at: path) else { return nil }
        if reference.hasPrefix("https://") { return .jwksURL(reference) }
        guard reference.hasPrefix("file:") else {
            error(node, "'\(path)' must be file:path or an https:// URL of a JWKS document")
            return nil
        }
        let full = resolve(path: String(reference.dropFirst(5)))
        guard let data = FileManager.default.contents(atPath: full) else {
            error(node, "'\(path)' refers to \(full), which does not exist; create it or fix the path")
            return nil
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            object["keys"] is [Any]
        else {
            error(node, "'\(path)': \(full) is not a JWKS document (a JSON object with a \"keys\" list)")
            return nil
        }
        return .jwksFile(path: full)
    }

    mutating func readDomain(_ node: Node, at path: String) -> DomainVerification? {
        guard
            let entries = mapping(node, at: path, allowed: ["verification", "verifiedAt"], required: ["verification"]),
            let token = string(entries["verification"], at: "\(path).verification")
        else { return nil }
        if !token.hasPrefix("hub-verify=") {
            error(
                entries["verification"],
                "'\(path).verification' must look like hub-verify=…; let hub map-app generate it")
        }
        var verifiedAt: Date?
        if let text = string(entries["verifiedAt"], at: "\(path).verifiedAt") {
            verifiedAt = ISO8601DateFormatter().date(from: text)
            if verifiedAt == nil { error(entries["verifiedAt"], "'\(path).verifiedAt' must be an ISO 8601 time") }
        }
        return DomainVerification(token: token, verifiedAt: verifiedAt)
    }

    mutating func readPublishers(_ node: Node, at path: String) -> [Publisher] {
        guard let items = sequence(node, at: path) else { return [] }
        var publishers: [Publisher] = []
        for (index, item) in items.enumerated() {
            let here = "\(path)[\(index)]"
            guard let entries = mapping(item, at: here, allowed: ["name", "key"], required: ["name", "key"]) else {
                continue
            }
            // Both are read before either is required, so a bad name does not hide a bad key.
            let name = string(entries["name"], at: "\(here).name")
            let key = bearerSecret(entries["key"], at: "\(here).key")
            guard let name, let key else { continue }
            if publishers.contains(where: { $0.name == name }) {
                error(entries["name"], "the publisher '\(name)' is listed twice")
            }
            publishers.append(Publisher(name: name, key: key))
        }
        return publishers
    }
}

extension Node {
    var sequence: Node.Sequence? {
        if case .sequence(let value) = self { return value }
        return nil
    }
}
