import Foundation
import HubCore
import Hummingbird

/// `/console`: the hub's apps. `/console/apps/{app}`: one app's onboarding steps as configured —
/// platforms and app IDs, identity registrations, push credentials and whether they can be used,
/// domain verification, publishers. Never a secret: credentials show their kind, keys their name.
extension Console {
    func addAppsPages(to router: RouterGroup<HubRequestContext>) {
        page(router, "") { _, _, _ in
            let statistics = try await hub.deliveryStatistics()
            let rows = hub.configuration.apps.map { app in
                let platforms = app.supportedPlatforms.map { "\($0.rawValue) (\(app.platforms[$0]?.count ?? 0))" }
                let credentials = credentialStates(app, suspended: statistics.suspended)
                let problems = credentials.filter { $0.kind == "error" }.count
                let transports: HTML =
                    credentials.isEmpty
                    ? ConsoleLayout.status("none", "off")
                    : credentials.html { "\(ConsoleLayout.status($0.transport, $0.kind)) " }
                return """
                    <tr><th scope="row"><a href="\(ConsolePaths.app(app.id))">\(app.name)</a><br>\
                    <span class="mono">\(app.id)</span></th>\
                    <td>\(platforms.joined(separator: ", "))</td>\
                    <td>\(transports)\(problems > 0 ? " — \(problems) not usable" : "")</td>\
                    <td>\(domainStatus(app))</td></tr>
                    """ as HTML
            }
            let content: HTML = """
                <p>\(hub.configuration.apps.count) app(s) on this hub. \
                \(statistics.pending) deliveries pending.</p>
                \(ConsoleLayout.table(
                    caption: "Apps", headers: ["App", "Platforms (app IDs)", "Push credentials", "Domain"], rows: rows))
                """
            return ConsoleView(title: "Apps", section: "apps", content: content)
        }
        page(router, "apps/:app") { _, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            let statistics = try await hub.deliveryStatistics()
            return ConsoleView(
                title: app.name, section: "app", app: app, content: appDetail(app, suspended: statistics.suspended))
        }
    }

    private func appDetail(_ app: CrossDeviceApp, suspended: [SuspendedDeliveries]) -> HTML {
        let platformRows = app.supportedPlatforms.map { platform in
            let ids = app.platforms[platform] ?? []
            let transports = hub.router.transports(for: platform).map(\.rawValue).joined(separator: ", ")
            return """
                <tr><th scope="row">\(platform.rawValue)</th>\
                <td><ul class="plain">\(ids.html { "<li class=\"mono\">\($0)</li>" })</ul></td>\
                <td>\(transports.isEmpty ? "none on this hub" : transports)</td></tr>
                """ as HTML
        }
        let credentialRows = credentialStates(app, suspended: suspended).map { state in
            """
            <tr><th scope="row">\(state.transport)</th><td>\(state.summary)</td>\
            <td>\(ConsoleLayout.status(state.label, state.kind)) \(state.detail)</td></tr>
            """ as HTML
        }
        let identityRows = app.identity.map { registration in
            let keys: String =
                switch registration.keys {
                case .jwksFile(let path): "JWKS file \(path)"
                case .jwksURL(let url): "JWKS \(url)"
                case .secret(let secret): "HS256 secret from \(secret.source)"
                }
            return """
                <tr><th scope="row">\(registration.issuer)</th>\
                <td>\(registration.audiences.joined(separator: ", "))</td><td>\(keys)</td>\
                <td>\(registration.userClaim)</td></tr>
                """ as HTML
        }
        var domain: HTML = "<p>\(domainStatus(app))</p>"
        if let verification = app.domain {
            domain = """
                \(domain)
                <p>The domain serves <code>{"verification": ["\(verification.token)"]}</code> at \
                <code>https://\(app.id)/.well-known/notification-hub.json</code>; \
                <code>hub map-app verify-domain --app \(app.id)</code> checks it and records the time.</p>
                """
        } else {
            domain = """
                \(domain)
                <p>Give the app a token with <code>hub map-app --app \(app.id) --domain-token</code>.</p>
                """
        }
        let publishers = app.publishers.map(\.name).joined(separator: ", ")
        return """
            <section aria-labelledby="facts"><h2 id="facts">App</h2>
            <dl class="facts">
            <dt>ID (domain)</dt><dd class="mono">\(app.id)</dd>
            <dt>Name</dt><dd>\(app.name)</dd>
            <dt>Delivery mode</dt><dd>\(app.delivery.mode.rawValue)</dd>
            <dt>Badge</dt><dd>\(app.delivery.badge?.rawValue ?? "none (only a publish's visualContent.badge)")</dd>
            <dt>Publishers</dt><dd>\(publishers.isEmpty ? "none" : publishers)</dd>
            </dl></section>
            <section aria-labelledby="platforms"><h2 id="platforms">Platforms and app IDs</h2>
            \(ConsoleLayout.table(
                caption: "App IDs per platform", headers: ["Platform", "App IDs", "Transports"], rows: platformRows))
            </section>
            <section aria-labelledby="credentials"><h2 id="credentials">Push credentials</h2>
            \(credentialRows.isEmpty
                ? "<p>No push credentials: devices use polling.</p>" as HTML
                : ConsoleLayout.table(
                    caption: "Credentials per transport", headers: ["Transport", "Credentials", "Status"],
                    rows: credentialRows))
            </section>
            <section aria-labelledby="identity"><h2 id="identity">Identity registrations</h2>
            \(ConsoleLayout.table(
                caption: "Whose user tokens sign users in", headers: ["Issuer", "Audiences", "Keys", "User claim"],
                rows: identityRows))
            </section>
            <section aria-labelledby="domain"><h2 id="domain">Domain verification</h2>
            \(domain)
            </section>
            """
    }

    private func domainStatus(_ app: CrossDeviceApp) -> HTML {
        guard let domain = app.domain else { return ConsoleLayout.status("no token yet", "off") }
        guard let verifiedAt = domain.verifiedAt else { return ConsoleLayout.status("not verified yet", "warning") }
        return "\(ConsoleLayout.status("verified", "ok")) \(ConsoleLayout.time(verifiedAt))"
    }

    /// Whether an app's credentials for one transport can be used.
    struct CredentialState: Sendable {
        var transport: String
        /// ``TransportCredentials/summary``: their kind, never a secret.
        var summary: String
        var label: String
        /// `ok`, `warning` or `error`.
        var kind: String
        var detail: String
    }

    /// Per transport with credentials: usable when the hub runs that transport and has no
    /// deliveries of the app suspended for a configuration fault on it (the provider refused
    /// the credentials); the latest reason when it has.
    func credentialStates(_ app: CrossDeviceApp, suspended: [SuspendedDeliveries]) -> [CredentialState] {
        app.credentials.transports.compactMap { id in
            guard let credentials = app.credentials[transport: id] else { return nil }
            var state = CredentialState(
                transport: id.rawValue, summary: credentials.summary, label: "usable", kind: "ok",
                detail: "the hub runs the \(id.rawValue) transport")
            if hub.router.transport(id) == nil {
                state.label = "not in use"
                state.kind = "warning"
                state.detail = "this hub does not run the \(id.rawValue) transport"
            } else if let parked = suspended.first(where: { $0.appId == app.id && $0.transport == id }) {
                state.label = "refused"
                state.kind = "error"
                state.detail =
                    "\(parked.count) deliveries suspended until the hub restarts: \(parked.lastReason ?? "no reason given")"
            }
            return state
        }
    }
}
