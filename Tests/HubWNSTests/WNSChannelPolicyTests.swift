import HubCore
import HubEmulators
import HubSQLite
import HubWNS
import Testing

@Suite("WNS: channel URI validation keeps the access token on WNS or allowed hosts")
struct WNSChannelPolicyTests {
    @Test(
        "WNS channel URIs as issued are accepted",
        arguments: [
            "https://cloud.notify.windows.com/?token=AwYAAAD%2bXyz",
            "https://dm3p.notify.windows.com/?token=abc",
            "https://wns2-by3p.notify.windows.com/?token=abc",
            "https://DB5.Notify.Windows.com:443/?token=abc",
        ])
    func accepted(uri: String) {
        #expect(WNSChannelPolicy().problem(with: uri) == nil)
    }

    @Test(
        "anything else is refused with a message that names the host but not the channel token",
        arguments: [
            ("http://cloud.notify.windows.com/?token=secret1", "https"),
            ("https://notify.windows.com/?token=secret1", "not allowed"),
            ("https://evilnotify.windows.com/?token=secret1", "not allowed"),
            ("https://cloud.notify.windows.com.evil.example/?token=secret1", "not allowed"),
            ("https://cloud.notify.windows.com:8443/?token=secret1", "port 8443"),
            ("https://user:pw@cloud.notify.windows.com/?token=secret1", "user information"),
            ("https://evil.example#@cloud.notify.windows.com/?token=secret1", "not allowed"),
            ("https://evil.example?@cloud.notify.windows.com/", "not allowed"),
            ("https://cloud.notify.windows.com%2eevil.example/?token=secret1", "host"),
            ("https://cloud.notify.windows.com./?token=secret1", "not allowed"),
            ("https://cloud.notify.windows.com/ ?token=secret1", "spaces"),
            ("https://127.0.0.1:8443/channels/1?token=secret1", "not allowed"),
            ("cloud.notify.windows.com/?token=secret1", "URL"),
        ])
    func refused(uri: String, expected: String) {
        let problem = WNSChannelPolicy().problem(with: uri)
        #expect(problem?.contains(expected) == true, "\(uri): \(problem ?? "accepted")")
        #expect(problem?.contains("secret1") != true)
    }

    @Test("the allow-list: host:port allows exactly that port, a bare host any port, never look-alikes")
    func allowList() {
        let policy = WNSChannelPolicy(additionalHosts: ["127.0.0.1:8443", "localhost"])
        #expect(policy.problem(with: "https://127.0.0.1:8443/channels/1?token=x") == nil)
        #expect(policy.problem(with: "https://127.0.0.1:8444/channels/1?token=x") != nil)
        #expect(policy.problem(with: "https://localhost:9000/channels/1") == nil)
        #expect(policy.problem(with: "https://LOCALHOST/channels/1") == nil)
        #expect(policy.problem(with: "https://localhost.evil.example/channels/1") != nil)
        #expect(policy.problem(with: "http://localhost:9000/channels/1") != nil, "still https only")
        #expect(policy.problem(with: "https://a@localhost:9000/channels/1") != nil, "still no user information")
        #expect(policy.problem(with: "https://cloud.notify.windows.com/?token=x") == nil, "WNS itself stays allowed")
    }

    @Test("registration through the hub refuses a foreign channel URI on field channelUri")
    func registration() async throws {
        try await WNSFixture.with { fixture in
            let hub = try Hub(
                configuration: HubConfiguration(apps: [fixture.app]), store: try SQLiteStore.inMemory(),
                transports: [fixture.transport])
            try await hub.store.migrate()
            func register(_ uri: String) async throws -> Endpoint {
                try await hub.registerEndpoint(
                    app: WNSFixture.appID, user: "alice", id: "surface",
                    EndpointRegistration(platform: .windows, appId: WNSFixture.package, transport: .wns, token: uri))
            }
            do {
                _ = try await register("https://attacker.example/collect?token=x")
                Issue.record("a foreign host was registered")
            } catch let error as HubError {
                #expect(error.fieldErrors.map(\.field) == ["channelUri"])
                #expect(error.fieldErrors.first?.message.contains("attacker.example") == true)
            }
            let endpoint = try await register(fixture.channel())
            #expect(endpoint.state == .active)
        }
    }
}
