public import HubCore
import Yams

/// What `hub map-app` was asked to do to one app: the onboarding steps as input.
/// Secret-bearing fields hold references (`file:path`, `env:NAME`), never values.
public struct AppMappingRequest: Sendable {
    public var appID: String
    public var name: String?
    /// App IDs to add per platform (kept in order; already-mapped IDs are no change).
    public var addIDs: [Platform: [String]] = [:]
    /// App IDs to remove per platform.
    public var removeIDs: [Platform: [String]] = [:]
    public var identity: [Identity] = []
    public var publishers: [(name: String, key: String)] = []
    public var deliveryMode: String?
    /// Written when the app has no domain verification token yet.
    public var verificationToken: String?
    /// Credentials made by transport plugins' onboarding (``TransportOnboarding/credentials``), by
    /// transport ID: the entries of `credentials.<id>`, in order, replacing what was there.
    public var credentialEntries: [(transport: String, entries: [(key: String, value: String)])] = []
    /// Credentials of any transport plugin, by transport ID, as a YAML flow mapping
    /// (`{secret: env:NOTES_WEBHOOK_SECRET}`): `hub map-app --credentials webhook='{…}'`. The
    /// plugin reads them when the edited file is checked.
    public var credentials: [(transport: String, yaml: String)] = []
    /// Problems the command line found with the flags of a transport (its plugin's checks), reported
    /// with the mapping's own.
    public var flagProblems: [String] = []

    public init(appID: String) { self.appID = appID }

    public struct Identity: Sendable {
        public var issuer: String
        public var audiences: [String]
        /// `file:…` or `https://…`.
        public var jwks: String?
        /// A reference to an HS256 secret.
        public var secret: String?
        public init(issuer: String, audiences: [String], jwks: String? = nil, secret: String? = nil) {
            self.issuer = issuer
            self.audiences = audiences
            self.jwks = jwks
            self.secret = secret
        }
    }
}

/// Applies an ``AppMappingRequest`` to the YAML value of an app (new or existing), checking formats
/// and the limit of ten IDs per platform. Keys it does not manage are kept as they were.
public enum AppMapper {
    /// - Returns: the new value of the app's entry under `apps:`.
    /// - Throws: ``AppMappingError`` listing every problem.
    public static func apply(_ request: AppMappingRequest, to existing: YAMLValue?) throws -> YAMLValue {
        var problems = request.flagProblems
        if let problem = DomainName.problem(request.appID) { problems.append("--app: \(problem)") }
        var app = existing ?? .mapping([("id", .scalar(request.appID))])
        if let name = request.name { app.setEntry("name", .scalar(name)) }
        if app.entry("name") == nil { app.setEntry("name", .scalar(request.appID)) }

        var platforms = app.entry("platforms") ?? .mapping([])
        for platform in Platform.known {
            let adding = request.addIDs[platform] ?? []
            let removing = request.removeIDs[platform] ?? []
            guard !adding.isEmpty || !removing.isEmpty else { continue }
            var ids = platforms.entry(platform.rawValue)?.entry("appIds")?.scalars ?? []
            for id in removing {
                if ids.contains(id) {
                    ids.removeAll { $0 == id }
                } else {
                    problems.append("\(platform): '\(id)' is not mapped in \(request.appID), nothing to remove")
                }
            }
            for id in adding where !ids.contains(id) {
                if let problem = platform.problem(withAppID: id) {
                    problems.append("--\(platform): \(problem)")
                    continue
                }
                ids.append(id)
            }
            if ids.count > Platform.maxAppIDs {
                problems.append(
                    "--\(platform): \(ids.count) \(platform.appIDKind)s for \(request.appID); a platform maps at most \(Platform.maxAppIDs) app IDs"
                )
            }
            if ids.isEmpty {
                platforms.removeEntry(platform.rawValue)
            } else {
                var entry = platforms.entry(platform.rawValue) ?? .mapping([])
                entry.setEntry("appIds", .sequence(ids.map { .scalar($0) }))
                platforms.setEntry(platform.rawValue, entry)
            }
        }
        app.setEntry("platforms", platforms)

        if !request.identity.isEmpty {
            var list = app.entry("identity")?.items ?? []
            for identity in request.identity {
                var entry: [(key: String, value: YAMLValue)] = [
                    ("issuer", .scalar(identity.issuer)),
                    ("audiences", .sequence(identity.audiences.map { .scalar($0) })),
                ]
                if let jwks = identity.jwks { entry.append(("jwks", .scalar(jwks))) }
                if let secret = identity.secret { entry.append(("secret", .scalar(secret))) }
                if identity.jwks == nil && identity.secret == nil {
                    problems.append("identity \(identity.issuer): give --jwks or --identity-secret")
                }
                // One registration per issuer: replace the one with the same issuer.
                list.removeAll { $0.entry("issuer")?.scalar == identity.issuer }
                list.append(.mapping(entry))
            }
            app.setEntry("identity", .sequence(list))
        }

        var credentials = app.entry("credentials") ?? .mapping([])
        for (transport, entries) in request.credentialEntries {
            credentials.setEntry(transport, .mapping(entries.map { ($0.key, .scalar($0.value)) }))
        }
        for (transport, yaml) in request.credentials {
            guard let node = try? Yams.compose(yaml: yaml), case .mapping = node else {
                problems.append("--credentials \(transport): give a YAML mapping, such as '{secret: env:NAME}'")
                continue
            }
            credentials.setEntry(transport, YAMLValue(node: node))
        }
        if case .mapping(let entries) = credentials, !entries.isEmpty { app.setEntry("credentials", credentials) }

        if app.entry("domain") == nil, let token = request.verificationToken {
            app.setEntry("domain", .mapping([("verification", .scalar(token))]))
        }
        if !request.publishers.isEmpty {
            var list = app.entry("publishers")?.items ?? []
            for publisher in request.publishers {
                list.removeAll { $0.entry("name")?.scalar == publisher.name }
                list.append(.mapping([("name", .scalar(publisher.name)), ("key", .scalar(publisher.key))]))
            }
            app.setEntry("publishers", .sequence(list))
        }
        if let mode = request.deliveryMode {
            if !DeliveryMode.known.map(\.rawValue).contains(mode) {
                problems.append("--delivery-mode must be shoulderTap or visible")
            }
            var delivery = app.entry("delivery") ?? .mapping([])
            delivery.setEntry("mode", .scalar(mode))
            app.setEntry("delivery", delivery)
        }
        if !problems.isEmpty { throw AppMappingError(problems: problems) }
        return app
    }
}

/// Why `hub map-app` refused a change; one line per problem.
public struct AppMappingError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}

extension YAMLValue {
    /// The value of `key` when this is a mapping.
    func entry(_ key: String) -> YAMLValue? {
        guard case .mapping(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    /// Sets `key` (kept in place, or appended) when this is a mapping.
    mutating func setEntry(_ key: String, _ value: YAMLValue) {
        guard case .mapping(var entries) = self else { return }
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].value = value
        } else {
            entries.append((key, value))
        }
        self = .mapping(entries)
    }

    mutating func removeEntry(_ key: String) {
        guard case .mapping(var entries) = self else { return }
        entries.removeAll { $0.key == key }
        self = .mapping(entries)
    }

    var scalar: String? {
        if case .scalar(let text) = self { return text }
        return nil
    }

    var items: [YAMLValue]? {
        if case .sequence(let items) = self { return items }
        return nil
    }

    var scalars: [String]? { items?.compactMap(\.scalar) }
}
