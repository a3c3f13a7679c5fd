public import HubCore

/// The webhook lane: posts each app's webhook events (hub.yaml `apps[].webhooks`) to its receivers.
///
/// Settings, `transports.webhooks`:
/// - `allowedHosts`: the hosts webhook URLs may name (``WebhookURLPolicy``): `*` (any public https
///   host, the default), `host`, `host:port` or `*.domain`; a host listed exactly may be private or
///   loopback, and be reached over plain http (a receiver on the same machine);
/// - `timeout`: how long one request may take before it counts as failed and is retried (10s);
/// - `trustRoots`: a PEM file of certificates trusted besides the system's.
///
/// The lane's concurrency is `dispatcher.lanes.webhooks` (16 unless set).
public struct WebhookPlugin: TransportPlugin {
    public init() {}

    public var id: TransportID { .webhooks }

    public var settingKeys: [String] { ["allowedHosts", "timeout", "trustRoots"] }

    public func readSettings(_ section: ConfigSection) -> (any Sendable)? {
        guard section.expectKeys(settingKeys) else { return nil }
        var settings = WebhookSettings()
        if let hosts = section.strings("allowedHosts") { settings.allowedHosts = hosts }
        if let timeout = section.duration("timeout") { settings.timeout = timeout }
        if let pem = section.fileText("trustRoots") { settings.trustRootsPEM = [pem] }
        return section.hasErrors ? nil : settings
    }

    /// A transport when an app has webhooks. Refuses to start when a webhook's URL is not allowed
    /// or its secret is not a `whsec_` secret, naming the app's webhook.
    public func makeTransport(_ context: TransportContext) throws -> (any Transport)? {
        let apps = context.apps.filter { !$0.webhooks.isEmpty }
        guard !apps.isEmpty else { return nil }
        let settings = context.settings(as: WebhookSettings.self, default: WebhookSettings())
        let policy = WebhookURLPolicy(allowedHosts: settings.allowedHosts)
        var problems: [String] = []
        for app in apps {
            for (index, webhook) in app.webhooks.enumerated() {
                let path = "the app '\(app.id)', webhooks[\(index)]"
                if let problem = policy.problem(with: webhook.url) { problems.append("\(path).url \(problem)") }
                if let problem = WebhookSignature.secretProblem(webhook.secret.reveal()) {
                    problems.append("\(path).secret (\(webhook.secret.source)) \(problem)")
                }
            }
        }
        guard problems.isEmpty else { throw HubError(.invalidRequest, problems.joined(separator: "; ")) }
        context.logger.info(
            "webhook transport enabled",
            metadata: ["apps": "\(apps.map { "\($0.id):\($0.webhooks.count)" }.joined(separator: ","))"])
        return try WebhookTransport(settings: settings, logger: context.logger)
    }
}

/// `transports.webhooks`, read by ``WebhookPlugin``.
public struct WebhookSettings: Sendable, Hashable {
    /// The hosts webhook URLs may name (``WebhookURLPolicy``).
    public var allowedHosts: [String] = ["*"]
    /// How long one request may take.
    public var timeout: Duration = .seconds(10)
    /// Certificates trusted besides the system's, as PEM.
    public var trustRootsPEM: [String] = []

    public init() {}
}
