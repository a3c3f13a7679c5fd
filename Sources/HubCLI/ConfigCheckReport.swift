import HubConfig
import HubCore
import HubServer

/// `hub config check` as checks with a status each, for the console's configuration page
/// (``HubServerConfiguration/configReport``): hub.yaml is loaded again with the plugins of this
/// build and the process's environment, as `hub serve` loaded it, and the credentials are checked
/// offline by their plugins (a key signs, a service account parses). Secrets appear only as
/// their references (`env:NAME`, `file:path`).
enum ConfigCheckReport {
    static func make(path: String, plugins: [any TransportPlugin]) async -> ConsoleConfigReport {
        let result = ConfigLoader(plugins: plugins).load(path: path)
        var checks = result.diagnostics.map { diagnostic in
            ConsoleConfigReport.Check(
                diagnostic.severity == .error ? .error : .warning,
                diagnostic.line > 0 ? "\(diagnostic.file):\(diagnostic.line):\(diagnostic.column)" : diagnostic.file,
                diagnostic.message)
        }
        guard let file = result.file, result.errors.isEmpty else {
            let summary = ConsoleConfigReport.Check(
                .error, path,
                "does not load: \(result.errors.count) error(s); hub serve would not start with the file as it is now")
            return ConsoleConfigReport(source: path, checks: [summary] + checks)
        }
        checks.insert(.init(.ok, path, "loads: \(file.apps.count) app(s)"), at: 0)
        checks += serverChecks(file)
        for app in file.apps { checks += await appChecks(app, file: file, plugins: plugins) }
        return ConsoleConfigReport(source: path, checks: checks)
    }

    private static func serverChecks(_ file: HubFile) -> [ConsoleConfigReport.Check] {
        let admin =
            file.server.adminToken.map { "admin token from \($0.source)" } ?? "no admin token (admin routes off)"
        let store: ConsoleConfigReport.Check =
            switch file.store {
            case .sqlite(let path): .init(.ok, "store", "sqlite \(path)")
            case .postgres(let url, let pool):
                ConfigSummary.postgres(url, pool: pool).problem == nil
                    ? .init(.ok, "store", ConfigSummary.postgres(url, pool: pool).summary)
                    : .init(.error, "store", ConfigSummary.postgres(url, pool: pool).summary)
            }
        return [.init(.ok, "server", "\(file.server.host):\(file.server.port), \(admin)"), store]
    }

    private static func appChecks(
        _ app: CrossDeviceApp, file: HubFile, plugins: [any TransportPlugin]
    ) async -> [ConsoleConfigReport.Check] {
        let subject = "app \(app.id)"
        var checks: [ConsoleConfigReport.Check] = []
        let platforms = app.supportedPlatforms.map { "\($0.rawValue) (\(app.platforms[$0]?.count ?? 0) app ID(s))" }
        checks.append(
            .init(.ok, subject, "\(app.name): \(platforms.joined(separator: ", ")), delivery \(app.delivery.mode)"))
        for id in app.credentials.transports {
            guard let credentials = app.credentials[transport: id] else { continue }
            let credentialSubject = "\(subject) credentials.\(id)"
            guard let plugin = plugins.first(where: { $0.id == id }) else {
                checks.append(.init(.warning, credentialSubject, "no plugin of this build reads them"))
                continue
            }
            let problems = await plugin.checkCredentials(
                credentials, settings: file.transports[id] ?? NoSettings(), online: false)
            if problems.isEmpty {
                checks.append(.init(.ok, credentialSubject, "\(credentials.summary): check out"))
            }
            checks += problems.map { .init(.error, credentialSubject, $0) }
        }
        let missing = plugins.filter { plugin in
            !plugin.platforms.isEmpty && plugin.platforms.contains { app.platforms[$0] != nil }
                && app.credentials[transport: plugin.id] == nil
        }
        if !missing.isEmpty {
            checks.append(
                .init(
                    .warning, subject,
                    "no credentials for \(missing.map(\.id.rawValue).joined(separator: ", ")): those devices use another transport (polling)"
                ))
        }
        switch app.domain {
        case nil:
            checks.append(
                .init(.warning, "\(subject) domain", "no verification token yet (hub map-app --domain-token)"))
        case let domain? where domain.verifiedAt == nil:
            checks.append(.init(.warning, "\(subject) domain", "not verified yet (hub map-app verify-domain)"))
        case .some:
            checks.append(.init(.ok, "\(subject) domain", "verified"))
        }
        let publishers = app.publishers.map { "\($0.name) (key from \($0.key.source))" }
        checks.append(
            .init(
                publishers.isEmpty ? .warning : .ok, "\(subject) publishers",
                publishers.isEmpty ? "none: nobody can publish" : publishers.joined(separator: ", ")))
        return checks
    }
}
