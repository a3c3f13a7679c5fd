import ArgumentParser
import HubConfig
import HubCore
import HubPostgres

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check hub.yaml, or print the configuration the hub would run.",
        subcommands: [Check.self, Print.self])

    struct Print: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the effective configuration: hub.yaml with HUB_… environment overrides, secrets redacted.",
            discussion: """
                Secrets show as their env:NAME or file:path reference; a secret given inline (in hub.yaml or \
                an override variable) prints as <redacted>. Problems go to standard error (exit 1 on errors).
                """)

        @OptionGroup var options: ConfigOption

        func run() async throws {
            let loader = ConfigLoader(plugins: HubCLI.plugins)
            guard let effective = loader.effective(path: options.config) else {
                _ = try options.loadOrExit()  // says why it cannot be read
                throw ExitCode(1)
            }
            var header = ["# \(options.config), as hub serve would run it (secrets redacted)"]
            for (variable, key) in effective.overrides { header.append("# \(key) from \(variable)") }
            print(header.joined(separator: "\n"))
            print(effective.text, terminator: "")
            let result = loader.load(path: options.config)
            for diagnostic in result.diagnostics { printError(diagnostic.description) }
            if !result.errors.isEmpty { throw ExitCode(1) }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Report every problem in hub.yaml with file:line:column; exit 1 on errors, else print a summary.")

        @OptionGroup var options: ConfigOption

        func run() async throws {
            let file = try options.loadOrExit()
            print(ConfigSummary.render(file))
            // Beyond reading: each plugin's own checks (a key signs, a certificate opens), offline.
            var failed = false
            for app in file.apps {
                for problem in await CredentialChecks.run(app, in: file, plugins: HubCLI.plugins, online: false)
                    .problems
                {
                    printError("\(file.path): error: app \(app.id): \(problem)")
                    failed = true
                }
            }
            if failed { throw ExitCode(1) }
            if case .postgres(let url, let pool) = file.store,
                let problem = ConfigSummary.postgres(url, pool: pool).problem
            {
                printError("\(file.path): store.postgres.url: \(problem)")
                throw ExitCode(1)
            }
        }
    }
}

/// A human summary of a loaded hub.yaml; secrets appear only as their references.
enum ConfigSummary {
    /// The PostgreSQL store as `hub serve` would connect to it (its hosts, in the order tried, and
    /// which of them it uses), or why its URL is unusable; never the password.
    static func postgres(_ url: Secret, pool: Int) -> (summary: String, problem: String?) {
        do {
            let configuration = try PostgresStore.Configuration(url: url, poolSize: pool)
            let hosts = configuration.hosts.map(\.description).joined(separator: ", ")
            let target =
                configuration.hosts.count > 1
                ? "; tried in this order, the first that is \(configuration.targetSessionAttributes) is used,"
                    + " and again after a failover"
                : configuration.targetSessionAttributes == .any
                    ? "" : " (\(configuration.targetSessionAttributes) only)"
            return ("postgres (\(url.source)), pool \(pool), host(s) \(hosts)\(target)", nil)
        } catch {
            return ("postgres (\(url.source)), pool \(pool), URL unusable: \(error.message)", error.message)
        }
    }

    static func render(_ file: HubFile) -> String {
        var lines = ["\(file.path): OK, \(file.apps.count) app(s)"]
        lines.append(
            "  server: \(file.server.host):\(file.server.port), admin token: \(file.server.adminToken?.source ?? "not set (admin routes off)")"
        )
        switch file.store {
        case .sqlite(let path): lines.append("  store: sqlite \(path)")
        case .postgres(let url, let pool): lines.append("  store: \(postgres(url, pool: pool).summary)")
        }
        lines.append("  broadcasts: \(describe(file.broadcasts))")
        for app in file.apps {
            lines.append("  app \(app.id) (\(app.name)), delivery \(app.delivery.mode)")
            for platform in app.supportedPlatforms {
                let ids = app.platforms[platform] ?? []
                lines.append("    \(platform): \(ids.count) app ID(s): \(ids.joined(separator: ", "))")
            }
            for registration in app.identity {
                let keys: String
                switch registration.keys {
                case .jwksFile(let path): keys = "JWKS file \(path)"
                case .jwksURL(let url): keys = "JWKS \(url)"
                case .secret(let secret): keys = "HS256 secret from \(secret.source)"
                }
                lines.append(
                    "    identity: \(registration.issuer), audiences \(registration.audiences.joined(separator: ", ")), \(keys)"
                )
            }
            for id in app.credentials.transports {
                if let credentials = app.credentials[transport: id] {
                    lines.append("    \(id): \(credentials.summary)")
                }
            }
            let missing = HubCLI.plugins.filter { plugin in
                !plugin.platforms.isEmpty && plugin.platforms.contains { app.platforms[$0] != nil }
                    && app.credentials[transport: plugin.id] == nil
            }
            if !missing.isEmpty {
                lines.append(
                    "    no credentials for \(missing.map(\.id.rawValue).joined(separator: ", ")): those devices use another transport (polling)"
                )
            }
            let domain = app.domain.map { $0.verifiedAt == nil ? "not verified yet" : "verified" } ?? "no token yet"
            lines.append("    domain: \(domain)")
            lines.append(
                "    publishers: \(app.publishers.map { "\($0.name) (key from \($0.key.source))" }.joined(separator: ", "))"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// The `broadcasts:` section as the expander runs it.
    static func describe(_ broadcasts: BroadcastSettings) -> String {
        guard broadcasts.enabled else { return "not expanded by this instance (enabled: false)" }
        let pace = broadcasts.maxUsersPerSecond.map { "at most \($0) users/s" } ?? "at the pace of delivery"
        return "chunks of \(broadcasts.chunkSize) users, \(broadcasts.concurrentChunks) at a time, "
            + "lease \(Int(broadcasts.lease.seconds))s, \(pace)"
    }
}
