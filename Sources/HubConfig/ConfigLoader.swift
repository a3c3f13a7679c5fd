public import Foundation
public import HubCore
import Yams

/// Loads hub.yaml into a ``HubFile``, reporting every problem at once with file:line:column.
///
/// ```swift
/// let loaded = ConfigLoader().load(path: "hub.yaml")
/// for diagnostic in loaded.diagnostics { print(diagnostic) }
/// guard let file = loaded.file else { exit(1) }
/// ```
public struct ConfigLoader: Sendable {
    public let environment: [String: String]
    /// Whether `HUB_<SECTION>_…` variables of `environment` override hub.yaml keys (see docs/configuration.md,
    /// "hub.yaml"); `hub map-app` edits the file as written and turns it off.
    public var applyEnvironment: Bool
    /// The transport plugins of this build: each reads its `transports.<id>` and `credentials.<id>`;
    /// keys naming other transports are errors.
    public var plugins: [any TransportPlugin]

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment, applyEnvironment: Bool = true,
        plugins: [any TransportPlugin] = []
    ) {
        self.environment = environment
        self.applyEnvironment = applyEnvironment
        self.plugins = plugins
    }

    /// The outcome of a load: the file when it has no errors, and every diagnostic.
    public struct Result: Sendable {
        public var file: HubFile?
        public var diagnostics: [ConfigDiagnostic]
        public var errors: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .error } }
        public var warnings: [ConfigDiagnostic] { diagnostics.filter { $0.severity == .warning } }

        /// The file, or a ``ConfigError`` listing every error.
        public func get() throws -> HubFile {
            guard let file, errors.isEmpty else { throw ConfigError(diagnostics: errors) }
            return file
        }
    }

    public func load(path: String) -> Result {
        guard let data = FileManager.default.contents(atPath: path) else {
            let message =
                FileManager.default.fileExists(atPath: path)
                ? "cannot read the file; check its permissions"
                : "no such file; create it (see the sample hub.yaml) or pass --config"
            return Result(
                file: nil,
                diagnostics: [ConfigDiagnostic(file: path, line: 0, column: 0, severity: .error, message: message)])
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return load(text: String(decoding: data, as: UTF8.self), path: path, baseDirectory: directory)
    }

    public func load(text: String, path: String, baseDirectory: String) -> Result {
        var reader = ConfigReader(file: path, baseDirectory: baseDirectory, environment: environment)
        reader.plugins = plugins
        var root: Node
        do {
            root = try Yams.compose(yaml: text) ?? Node.mapping(Node.Mapping([]))
        } catch {
            reader.report(.error, at: Self.mark(of: error), "not valid YAML: \(Self.problem(of: error))")
            return Result(file: nil, diagnostics: reader.diagnostics)
        }
        if applyEnvironment {
            let firstLine = text.split(separator: "\n", omittingEmptySubsequences: false).count + 2
            (root, reader.overrides) = EnvironmentOverrides.apply(
                to: root, environment: environment, firstLine: firstLine, plugins: plugins, reader: &reader)
        }
        let topKeys = EnvironmentOverrides.sections
        guard let top = reader.mapping(root, at: "hub.yaml", allowed: topKeys) else {
            return Result(file: nil, diagnostics: reader.diagnostics)
        }
        var file = HubFile(
            path: path, server: ServerSettings(), store: .sqlite(path: reader.resolve(path: "hub.sqlite")),
            logging: LoggingSettings(), limits: LimitSettings(), apps: [])
        if let node = top["server"] { file.server = reader.readServer(node) }
        if let node = top["store"], let store = reader.readStore(node) { file.store = store }
        if let node = top["logging"] { file.logging = reader.readLogging(node) }
        if let node = top["limits"] { file.limits = reader.readLimits(node) }
        if let node = top["dispatcher"] { file.dispatcher = reader.readDispatcher(node) }
        if let node = top["broadcasts"] { file.broadcasts = reader.readBroadcasts(node) }
        file.transports = reader.readTransports(top["transports"])
        if let node = top["apps"] { file.apps = reader.readApps(node) }
        if let node = top["rateLimits"] { file.rateLimits = reader.readRateLimits(node, at: "rateLimits") }
        if let node = top["apps"] { file.appRateLimits = reader.readAppRateLimits(node) }
        let hasErrors = reader.diagnostics.contains { $0.severity == .error }
        return Result(file: hasErrors ? nil : file, diagnostics: reader.diagnostics)
    }

    static func mark(of error: any Error) -> Mark? {
        switch error as? YamlError {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark
        default: nil
        }
    }

    static func problem(of error: any Error) -> String {
        switch error as? YamlError {
        case .scanner(let context, let problem, _, _), .parser(let context, let problem, _, _),
            .composer(let context, let problem, _, _):
            [context.map { "\($0.text)," }, problem].compactMap { $0 }.joined(separator: " ")
        default: "\(error)"
        }
    }
}

extension ConfigReader {
    mutating func readServer(_ node: Node) -> ServerSettings {
        var server = ServerSettings()
        let allowed = [
            "listen", "adminToken", "cursorSecret", "maxBodyBytes", "maxBatchBodyBytes", "instanceId", "metricsListen",
            "connections", "trustedProxies",
        ]
        guard let entries = mapping(node, at: "server", allowed: allowed) else { return server }
        if let listen = address(entries["listen"], at: "server.listen") {
            (server.host, server.port) = (listen.host, listen.port)
        }
        server.metricsListen = address(entries["metricsListen"], at: "server.metricsListen")
        server.instanceID = string(entries["instanceId"], at: "server.instanceId")
        server.adminToken = bearerSecret(entries["adminToken"], at: "server.adminToken")
        server.cursorSecret = secret(entries["cursorSecret"], at: "server.cursorSecret")
        if let cursorSecret = server.cursorSecret, let problem = SecretStrength.keyProblem(cursorSecret) {
            error(
                entries["cursorSecret"],
                "'server.cursorSecret' \(problem); use 32 random bytes or more (openssl rand -hex 32 > cursor.key), or leave it out to have one generated"
            )
        }
        if let bytes = integer(entries["maxBodyBytes"], at: "server.maxBodyBytes", in: 1024...(16 << 20)) {
            server.maxBodyBytes = bytes
        }
        if let bytes = integer(
            entries["maxBatchBodyBytes"], at: "server.maxBatchBodyBytes", in: (64 << 10)...(64 << 20))
        {
            server.maxBatchBodyBytes = bytes
        }
        if let node = entries["connections"] { server.connections = readConnections(node) }
        if let node = entries["trustedProxies"] { server.trustedProxies = readTrustedProxies(node) }
        return server
    }

    /// A `host:port` value (`[::1]:8080` for IPv6).
    mutating func address(_ node: Node?, at path: String) -> ListenAddress? {
        guard let node, let text = string(node, at: path) else { return nil }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port), colon > text.startIndex
        else {
            error(node, "'\(path)' must be host:port, such as 127.0.0.1:8080")
            return nil
        }
        return ListenAddress(
            host: String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port)
    }

    mutating func readStore(_ node: Node) -> StoreSettings? {
        guard let entries = mapping(node, at: "store", allowed: ["sqlite", "postgres"]) else { return nil }
        if entries["sqlite"] != nil && entries["postgres"] != nil {
            error(node, "'store' takes one of sqlite or postgres, not both")
            return nil
        }
        if let sqlite = entries["sqlite"] {
            guard let sub = mapping(sqlite, at: "store.sqlite", allowed: ["path"], required: ["path"]),
                let path = string(sub["path"], at: "store.sqlite.path")
            else { return nil }
            return .sqlite(path: resolve(path: path))
        }
        if let postgres = entries["postgres"] {
            guard let sub = mapping(postgres, at: "store.postgres", allowed: ["url", "poolSize"], required: ["url"])
            else { return nil }
            let url = secret(sub["url"], at: "store.postgres.url")
            let pool = integer(sub["poolSize"], at: "store.postgres.poolSize", in: 1...512) ?? 10
            return url.map { .postgres(url: $0, poolSize: pool) }
        }
        error(node, "'store' needs sqlite: { path: … } or postgres: { url: env:… }")
        return nil
    }

    mutating func readLogging(_ node: Node) -> LoggingSettings {
        var logging = LoggingSettings()
        guard let entries = mapping(node, at: "logging", allowed: ["format", "level"]) else { return logging }
        if let format = choice(entries["format"], at: "logging.format", LoggingSettings.Format.allCases.map(\.rawValue))
        {
            logging.format = LoggingSettings.Format(rawValue: format) ?? .text
        }
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        if let level = choice(entries["level"], at: "logging.level", levels) { logging.level = level }
        return logging
    }

    /// What `limits.maxEndpointsPerUser` and `apps[].maxEndpointsPerUser` may be.
    static let endpointLimits = 1...10_000

    mutating func readLimits(_ node: Node) -> LimitSettings {
        var limits = LimitSettings()
        let allowed = ["defaultLifetime", "maxLifetime", "maxPayloadBytes", "retention", "maxEndpointsPerUser"]
        guard let entries = mapping(node, at: "limits", allowed: allowed) else { return limits }
        if let count = integer(
            entries["maxEndpointsPerUser"], at: "limits.maxEndpointsPerUser", in: Self.endpointLimits)
        {
            limits.maxEndpointsPerUser = count
        }
        if let value = duration(entries["defaultLifetime"], at: "limits.defaultLifetime") {
            limits.defaultLifetime = value
        }
        if let value = duration(entries["maxLifetime"], at: "limits.maxLifetime") { limits.maxLifetime = value }
        if let value = duration(entries["retention"], at: "limits.retention") { limits.retention = value }
        if let bytes = integer(entries["maxPayloadBytes"], at: "limits.maxPayloadBytes", in: 256...(1 << 20)) {
            limits.maxPayloadBytes = bytes
        }
        if limits.defaultLifetime > limits.maxLifetime {
            error(entries["defaultLifetime"] ?? node, "'limits.defaultLifetime' is longer than 'limits.maxLifetime'")
        }
        return limits
    }
}
