import ArgumentParser
import HubConfig
import HubCore

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check hub.yaml.", subcommands: [Check.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Report every problem in hub.yaml with file:line:column; exit 1 on errors, else print a summary.")

        @OptionGroup var options: ConfigOption

        func run() async throws {
            print(ConfigSummary.render(try options.loadOrExit()))
        }
    }
}

/// A human summary of a loaded hub.yaml; secrets appear only as their references.
enum ConfigSummary {
    static func render(_ file: HubFile) -> String {
        var lines = ["\(file.path): OK, \(file.apps.count) app(s)"]
        lines.append(
            "  server: \(file.server.host):\(file.server.port), admin token: \(file.server.adminToken?.source ?? "not set (admin routes off)")"
        )
        switch file.store {
        case .sqlite(let path): lines.append("  store: sqlite \(path)")
        case .postgres(let url, let pool): lines.append("  store: postgres (\(url.source)), pool \(pool)")
        }
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
            if let apns = app.credentials.apns {
                var text = "    apns: \(apns.kind), \(apns.environment)"
                if case .token(let keyID, let teamID, let key) = apns.authentication {
                    text += ", key \(keyID), team \(teamID), from \(key.source)"
                }
                lines.append(text)
            }
            if let fcm = app.credentials.fcm {
                lines.append("    fcm: service account \(fcm.clientEmail), project \(fcm.projectID)")
            }
            if let wns = app.credentials.wns { lines.append("    wns: \(wns.kind)") }
            let missing = [
                ("apns", Platform.ios, app.credentials.apns == nil),
                ("fcm", Platform.android, app.credentials.fcm == nil),
                ("wns", Platform.windows, app.credentials.wns == nil),
            ]
            .filter { app.platforms[$0.1] != nil && $0.2 }.map(\.0)
            if !missing.isEmpty {
                lines.append(
                    "    no credentials for \(missing.joined(separator: ", ")): those devices can use polling only")
            }
            let domain = app.domain.map { $0.verifiedAt == nil ? "not verified yet" : "verified" } ?? "no token yet"
            lines.append("    domain: \(domain)")
            lines.append(
                "    publishers: \(app.publishers.map { "\($0.name) (key from \($0.key.source))" }.joined(separator: ", "))"
            )
        }
        return lines.joined(separator: "\n")
    }
}
