import Foundation
import HubCore
import Yams

/// Environment variables that override hub.yaml keys, one naming rule for every key:
/// `HUB_` + the key's path, each part in upper snake case, joined by `_`.
///
/// - `server.listen` → `HUB_SERVER_LISTEN`, `server.adminToken` → `HUB_SERVER_ADMIN_TOKEN`,
///   `store.postgres.url` → `HUB_STORE_POSTGRES_URL`, `limits.maxPayloadBytes` → `HUB_LIMITS_MAX_PAYLOAD_BYTES`.
/// - An app of `apps` is named by its ID in upper case with every other character as `_`:
///   `HUB_APPS_NOTES_CONTOSO_COM_DELIVERY_MODE` for `delivery.mode` of `notes.contoso.com`.
/// - A value is YAML, so a list or a mapping is given whole in flow style and replaces the key's
///   value: `HUB_APPS_NOTES_CONTOSO_COM_PUBLISHERS='[{name: backend, key: env:KEY}]'`,
///   `HUB_STORE='{postgres: {url: env:HUB_DATABASE_URL}}'` (the whole section).
/// - A secret key (`adminToken`, `url` of postgres, `secret`, `key`, …) takes `env:NAME`,
///   `file:path`, or the secret itself, which is then reported as coming from the variable.
///
/// - A transport's settings: `transports.apns.server` → `HUB_TRANSPORTS_APNS_SERVER`; an app's
///   credentials for it: `HUB_APPS_NOTES_CONTOSO_COM_CREDENTIALS_FCM_SERVICE_ACCOUNT`. The keys are
///   those the plugins declare (``TransportPlugin/settingKeys``, ``TransportPlugin/credentialKeys``).
///
/// Only variables whose first part names a section (`HUB_SERVER…`, `HUB_STORE…`, `HUB_LOGGING…`,
/// `HUB_LIMITS…`, `HUB_DISPATCHER…`, `HUB_BROADCASTS…`, `HUB_RATE_LIMITS…`, `HUB_TRANSPORTS…`, `HUB_APPS…`) are overrides. A variable of a
/// section that names no key is an error, with a suggestion. The variables of earlier versions that
/// named a transport's setting without the section (`HUB_APNS_SERVER`, `HUB_FCM_SEND_URL`, …: `HUB_` +
/// the plugin ID + the key) still apply, with a warning that names their new name.
struct EnvironmentOverrides {
    static let sections = [
        "server", "store", "logging", "limits", "dispatcher", "broadcasts", "rateLimits", "transports", "apps",
    ]

    /// The keys of each mapping, by path (`*` for an app); lists other than `apps` are set whole.
    static let baseSchema: [String: [String]] = [
        "": sections,
        "server": [
            "listen", "adminToken", "cursorSecret", "maxBodyBytes", "maxBatchBodyBytes", "instanceId", "metricsListen",
            "connections", "trustedProxies",
        ],
        "server.connections": ConfigReader.connectionKeys,
        "store": ["sqlite", "postgres"], "store.sqlite": ["path"], "store.postgres": ["url", "poolSize"],
        "logging": ["format", "level"],
        "limits": ["defaultLifetime", "maxLifetime", "maxPayloadBytes", "retention", "maxEndpointsPerUser"],
        "dispatcher": ConfigReader.dispatcherKeys,
        "broadcasts": ConfigReader.broadcastKeys,
        "apps.*": ConfigReader.appKeys,
        "apps.*.platforms": Platform.known.map(\.rawValue),
        "apps.*.platforms.*": ["appIds"],
        "apps.*.domain": ["verification", "verifiedAt"],
        "apps.*.delivery": ["mode", "badge"],
        "rateLimits": ConfigReader.rateLimitKeys,
        "apps.*.rateLimits": ConfigReader.rateLimitKeys,
    ]

    /// The keys of each mapping, the plugins' sections included.
    static func schema(plugins: [any TransportPlugin]) -> [String: [String]] {
        var schema = baseSchema
        schema["transports"] = plugins.map(\.id.rawValue)
        schema["dispatcher.lanes"] = plugins.map(\.id.rawValue)
        schema["apps.*.credentials"] = plugins.map(\.id.rawValue)
        for plugin in plugins {
            schema["transports.\(plugin.id)"] = plugin.settingKeys
            schema["apps.*.credentials.\(plugin.id)"] = plugin.credentialKeys
        }
        return schema
    }

    /// A variable of an earlier version for a transport setting (`HUB_APNS_SERVER`): its new name.
    static func legacyName(_ name: String, plugins: [any TransportPlugin]) -> String? {
        let rest = name.dropFirst(4)
        for plugin in plugins {
            let prefix = snake(plugin.id.rawValue) + "_"
            guard rest.hasPrefix(prefix) else { continue }
            let key = rest.dropFirst(prefix.count)
            if let match = plugin.settingKeys.first(where: { snake($0) == key }) {
                return variable(for: ["transports", plugin.id.rawValue, match])
            }
        }
        return nil
    }

    /// One variable applied: its name, and the lines its value's nodes carry (past hub.yaml's last line).
    struct Applied {
        var name: String
        var path: String
        var lines: ClosedRange<Int>
    }

    /// `adminToken` → `ADMIN_TOKEN`; `notes.contoso.com` → `NOTES_CONTOSO_COM`.
    static func snake(_ key: String) -> String {
        var out = ""
        var previous: Character?
        for character in key {
            if character.isUppercase, let previous, previous.isLowercase || previous.isNumber { out += "_" }
            out += character.isLetter || character.isNumber ? String(character).uppercased() : "_"
            previous = character
        }
        return out
    }

    /// The variable that overrides `path` (`server.listen`, `apps.notes.contoso.com.delivery.mode`).
    static func variable(for path: [String]) -> String { "HUB_" + path.map(snake).joined(separator: "_") }

    /// Applies every override of `environment` to `root`, reporting the ones that name no key.
    static func apply(
        to root: Node, environment: [String: String], firstLine: Int, plugins: [any TransportPlugin] = [],
        reader: inout ConfigReader
    ) -> (Node, [Applied]) {
        var root = root
        var applied: [Applied] = []
        var line = firstLine
        let schema = schema(plugins: plugins)
        var variables: [(name: String, value: String)] = []
        for (name, value) in environment {
            guard name.hasPrefix("HUB_"), let renamed = legacyName(name, plugins: plugins) else {
                variables.append((name, value))
                continue
            }
            guard environment[renamed] == nil else { continue }  // the new name wins
            reader.report(
                .warning, at: nil, "is read as \(renamed); rename it (this name will stop working)",
                file: "environment variable \(name)")
            variables.append((renamed, value))
        }
        for (name, value) in variables.sorted(by: { $0.name < $1.name }) {
            guard name.hasPrefix("HUB_") else { continue }
            let rest = String(name.dropFirst(4))
            guard sections.contains(where: { rest == snake($0) || rest.hasPrefix(snake($0) + "_") }) else { continue }
            guard let path = resolve(rest, in: root, schema: schema, schemaPath: "", documentPath: []) else {
                let known = knownVariables(in: root, schema: schema)
                var message = "names no hub.yaml key (HUB_ + the key's path in upper snake case)"
                if let suggestion = Suggestion.closest(to: name, in: known) {
                    message += "; did you mean \(suggestion)?"
                }
                reader.report(.error, at: nil, message, file: "environment variable \(name)")
                continue
            }
            let padded = String(repeating: "\n", count: line - 1) + value
            let node: Node
            do {
                node = try Yams.compose(yaml: padded) ?? .scalar(.init("", .implicit, .plain))
            } catch {
                reader.report(
                    .error, at: nil, "not a YAML value (quote it): \(ConfigLoader.problem(of: error))",
                    file: "environment variable \(name)")
                continue
            }
            let lines = value.split(separator: "\n", omittingEmptySubsequences: false).count
            applied.append(Applied(name: name, path: describe(path), lines: line...(line + lines - 1)))
            line += lines + 1
            root = set(node, at: path[...], in: root)
        }
        return (root, applied)
    }

    /// A step of a path: a mapping key or a list index.
    enum Step: Equatable {
        case key(String)
        case index(Int)
    }

    static func describe(_ path: [Step]) -> String {
        path.map { step in
            switch step {
            case .key(let key): key
            case .index(let index): "[\(index)]"
            }
        }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
    }

    /// The path `rest` (a variable without `HUB_`) names, or nil.
    static func resolve(
        _ rest: String, in node: Node?, schema: [String: [String]], schemaPath: String, documentPath: [Step]
    ) -> [Step]? {
        if case .sequence(let items)? = node, schemaPath == "apps" {
            // An app, by its ID (the longest that matches) or by its index.
            var candidates: [(String, Int)] = []
            for (index, item) in items.enumerated() {
                if let id = item.mapping?["id"]?.scalar?.string { candidates.append((snake(id), index)) }
                candidates.append((String(index), index))
            }
            for (prefix, index) in candidates.sorted(by: { $0.0.count > $1.0.count })
            where rest.hasPrefix(prefix + "_") {
                let tail = String(rest.dropFirst(prefix.count + 1))
                if let path = resolve(
                    tail, in: items[index], schema: schema, schemaPath: "apps.*",
                    documentPath: documentPath + [.index(index)])
                {
                    return path
                }
            }
            return nil
        }
        var keys = schema[schemaPath] ?? []
        if case .mapping(let mapping)? = node {
            for key in mapping.keys.compactMap(\.scalar?.string) where !keys.contains(key) { keys.append(key) }
        }
        for key in keys.sorted(by: { snake($0).count > snake($1).count }) {
            let name = snake(key)
            let child = node?.mapping?[key]
            let childSchema =
                schema[schemaPath.isEmpty ? key : "\(schemaPath).\(key)"] != nil || key == "apps"
                ? (schemaPath.isEmpty ? key : "\(schemaPath).\(key)")
                : "\(schemaPath).*"
            if rest == name { return documentPath + [.key(key)] }
            if rest.hasPrefix(name + "_"),
                let path = resolve(
                    String(rest.dropFirst(name.count + 1)), in: child, schema: schema, schemaPath: childSchema,
                    documentPath: documentPath + [.key(key)])
            {
                return path
            }
        }
        return nil
    }

    /// Every variable the schema and the document's apps allow, for suggestions.
    static func knownVariables(in root: Node, schema: [String: [String]]) -> [String] {
        var names: [String] = []
        for (path, keys) in schema where !path.hasPrefix("apps") {
            let prefix = path.isEmpty ? [] : path.split(separator: ".").map(String.init)
            names += keys.map { variable(for: prefix + [$0]) }
        }
        for item in root.mapping?["apps"]?.sequence ?? [] {
            guard let id = item.mapping?["id"]?.scalar?.string else { continue }
            for (path, keys) in schema where path.hasPrefix("apps.*") {
                let parts = path.split(separator: ".").dropFirst(2).map(String.init)
                guard !parts.contains("*") else { continue }
                names += keys.map { variable(for: ["apps", id] + parts + [$0]) }
            }
        }
        return names
    }

    /// `root` with `value` at `path`, creating mappings on the way.
    static func set(_ value: Node, at path: ArraySlice<Step>, in node: Node?) -> Node {
        guard let step = path.first else { return value }
        switch step {
        case .key(let key):
            var pairs: [(Node, Node)] = []
            if case .mapping(let mapping)? = node { pairs = mapping.map { ($0.key, $0.value) } }
            if let index = pairs.firstIndex(where: { $0.0.scalar?.string == key }) {
                pairs[index].1 = set(value, at: path.dropFirst(), in: pairs[index].1)
            } else {
                pairs.append((.scalar(.init(key)), set(value, at: path.dropFirst(), in: nil)))
            }
            return .mapping(.init(pairs))
        case .index(let index):
            guard case .sequence(let sequence)? = node, index < sequence.count else { return node ?? value }
            var items = Array(sequence)
            items[index] = set(value, at: path.dropFirst(), in: items[index])
            return .sequence(.init(items))
        }
    }
}
