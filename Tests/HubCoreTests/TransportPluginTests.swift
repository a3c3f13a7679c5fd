import Foundation
import HubSQLite
import HubTesting
import Testing

@testable import HubCore

/// The plugin contract: what a plugin declares decides registration and planning, and its hub.yaml
/// sections are read with positions through ``ConfigSection``.
@Suite("transport plugins: the contract")
struct TransportPluginTests {
    /// A transport for one platform that takes one attribute and fills in its default.
    struct Declared: Transport {
        let id = TransportID("declared")
        var platforms: Set<Platform> { [.android] }
        var endpointAttributes: Set<String> { ["region"] }
        func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome { .accepted }
        func prepare(_ endpoint: Endpoint, for app: CrossDeviceApp) -> Endpoint {
            var endpoint = endpoint
            if endpoint.attributes["region"] == nil { endpoint.attributes["region"] = "eu" }
            return endpoint
        }
    }

    /// Wakes its devices in process and takes no token, as polling does.
    struct InProcess: Transport {
        let id = TransportID("local")
        var capabilities: TransportCapabilities { [.wakesInProcess, .tokenless] }
        func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome { .accepted }
    }

    static func hub() throws -> Hub {
        try Hub(
            configuration: HubConfiguration(apps: [TestHub.app]), store: try SQLiteStore.inMemory(),
            transports: [Declared(), InProcess()])
    }

    static func register(
        _ hub: Hub, _ id: String, platform: Platform, transport: String, token: String? = "tok",
        attributes: [String: String] = [:]
    ) async throws -> Endpoint {
        try await hub.registerEndpoint(
            app: TestHub.app.id, user: "alice", id: id,
            EndpointRegistration(
                platform: platform, appId: TestHub.app.platforms[platform]![0], transport: TransportID(transport),
                token: token, attributes: attributes))
    }

    @Test("registration follows the declarations: platforms, attributes (with the transport's defaults), tokens")
    func registration() async throws {
        let hub = try Self.hub()
        try await hub.store.migrate()
        let android = try await Self.register(hub, "a1", platform: .android, transport: "declared")
        #expect(android.attributes == ["region": "eu"], "prepare filled in the default")
        let stored = try await hub.endpoint(app: TestHub.app.id, user: "alice", id: "a1")
        #expect(stored.attributes == ["region": "eu"], "attributes are stored")

        let ios = try await #require(throws: HubError.self) {
            try await Self.register(hub, "i1", platform: .ios, transport: "declared")
        }
        #expect(ios.fieldErrors.map(\.field) == ["transport"])
        #expect(ios.fieldErrors.first?.message == "ios devices use local", "only the transports serving ios")

        let attribute = try await #require(throws: HubError.self) {
            try await Self.register(hub, "a2", platform: .android, transport: "declared", attributes: ["mode": "x"])
        }
        #expect(attribute.fieldErrors.map(\.field) == ["mode"])
        #expect(attribute.fieldErrors.first?.message == "does not apply to declared endpoints")

        let tokenless = try await #require(throws: HubError.self) {
            try await Self.register(hub, "l1", platform: .ios, transport: "local", token: "not-wanted")
        }
        #expect(tokenless.fieldErrors.map(\.field) == ["token"])
        let local = try await Self.register(hub, "l2", platform: .windows, transport: "local", token: nil)
        #expect(local.token == nil)

        let unknown = try await #require(throws: HubError.self) {
            try await Self.register(hub, "x1", platform: .android, transport: "apns")
        }
        #expect(unknown.fieldErrors.first?.message == "'apns' is not enabled on this hub (enabled: declared, local)")
    }

    @Test("a wakesInProcess transport gets no outbox rows; the hub wakes its endpoints and the router knows it")
    func inProcess() throws {
        let hub = try Self.hub()
        #expect(hub.planner.inProcessTransports == [TransportID("local")])
        #expect(hub.router.wakesInProcess(TransportID("local")))
        #expect(!hub.router.wakesInProcess(TransportID("declared")))
        #expect(hub.router.transports(for: .android) == [TransportID("declared"), TransportID("local")])
        #expect(hub.router.transports(for: .ios) == [TransportID("local")])
    }

    @Test("push credentials hold any plugin's type, compare by value, and never print a secret")
    func credentials() {
        struct Shared: TransportCredentials {
            static let transport = TransportID("shared")
            var key: Secret
            var summary: String { "key from \(key.source)" }
        }
        var credentials = PushCredentials()
        #expect(credentials.isEmpty)
        credentials[Shared.self] = Shared(key: Secret("s3cret-value", source: "env:KEY"))
        #expect(credentials.transports == [TransportID("shared")])
        #expect(credentials[Shared.self]?.key.reveal() == "s3cret-value")
        #expect(credentials[transport: TransportID("shared")]?.summary == "key from env:KEY")
        #expect(credentials == PushCredentials([Shared(key: Secret("s3cret-value", source: "env:KEY"))]))
        #expect(credentials != PushCredentials([Shared(key: Secret("other", source: "env:KEY"))]))
        #expect(!"\(credentials)".contains("s3cret-value"))
        credentials[Shared.self] = nil
        #expect(credentials.isEmpty)
    }

    static func at(_ line: Int, _ column: Int) -> ConfigLocation {
        ConfigLocation(file: "hub.yaml", line: line, column: column)
    }

    @Test("a section reports each problem at the value's or the key's position, and reads every key")
    func section() {
        let node = ConfigNode(
            .mapping([
                ("url", Self.at(2, 3), .scalar("ftp://x", at: Self.at(2, 8))),
                ("timout", Self.at(3, 3), .scalar("5s", at: Self.at(3, 11))),
                ("timeout", Self.at(4, 3), .scalar("500ms", at: Self.at(4, 12))),
                ("hosts", Self.at(5, 3), .scalar("a:1, b", at: Self.at(5, 10))),
                ("secret", Self.at(6, 3), .scalar("from-the-variable", at: .environment("HUB_TRANSPORTS_X_SECRET"))),
                ("count", Self.at(7, 3), .scalar("0", at: Self.at(7, 10))),
            ]), at: Self.at(2, 3))
        let section = ConfigSection(path: "transports.x", node: node, environment: [:])
        #expect(section.expectKeys(["url", "timeout", "hosts", "secret", "count"], required: ["port"]))
        #expect(section.url("url", allowHTTP: false) == nil)
        #expect(section.duration("timeout") == .milliseconds(500))
        #expect(section.strings("hosts") == ["a:1", "b"])
        let secret = section.secret("secret")
        #expect(secret?.reveal() == "from-the-variable" && secret?.source == "env:HUB_TRANSPORTS_X_SECRET")
        #expect(section.integer("count", in: 1...8) == nil)
        #expect(section.section("nested").exists == false)
        #expect(
            section.diagnostics.map(\.description) == [
                "hub.yaml:3:3: error: unknown key 'timout' in 'transports.x'; did you mean 'timeout'?",
                "hub.yaml:2:3: error: 'transports.x' is missing 'port'",
                "hub.yaml:2:8: error: 'transports.x.url' must be an absolute https URL, not 'ftp://x'",
                "hub.yaml:7:10: error: 'transports.x.count' must be a whole number from 1 to 8",
            ])
        #expect(section.hasErrors)
    }

    @Test("an absent section passes unless keys are required; an inline secret is a warning")
    func absent() {
        let absent = ConfigSection(path: "transports.y", node: nil, environment: [:])
        #expect(absent.expectKeys(["a"]))
        #expect(absent.diagnostics.isEmpty && !absent.exists)
        #expect(!absent.expectKeys(["a"], required: ["a"]))
        #expect(absent.diagnostics.map(\.message) == ["'transports.y' is missing; give a"])

        let inline = ConfigSection(
            path: "c", node: .mapping([("key", "plain")], at: Self.at(1, 1)), environment: ["K": "v"])
        #expect(inline.secret("key")?.reveal() == "plain")
        #expect(inline.diagnostics.map(\.severity) == [.warning])
        #expect(inline.secret("key", inline: false) == nil, "a reference is required")
    }
}
