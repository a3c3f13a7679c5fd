import Testing

@testable import HubConfig

@Suite("hub.yaml server.connections and trustedProxies")
struct ConnectionSettingsTests {
    @Test("defaults apply without the section; given values are read")
    func values() throws {
        #expect(try load("server: { listen: \"127.0.0.1:0\" }\n").get().server.connections == ConnectionSettings())
        let file = try load(
            """
            server:
              connections: { headerTimeout: 5s, bodyTimeout: 1m, idleTimeout: 90s, max: 20000, maxPerClient: 64 }
              trustedProxies: [10.0.0.5, "::1"]
            """
        ).get()
        let connections = file.server.connections
        #expect(connections.headerTimeout == .seconds(5))
        #expect(connections.bodyTimeout == .seconds(60))
        #expect(connections.idleTimeout == .seconds(90))
        #expect(connections.max == 20_000)
        #expect(connections.maxPerClient == 64)
        #expect(file.server.trustedProxies == ["10.0.0.5", "::1"])
        #expect(connections.maxActiveRequests == 256)
    }

    @Test("maxActiveRequests is read, overridden by HUB_SERVER_CONNECTIONS_MAX_ACTIVE_REQUESTS, and range-checked")
    func maxActiveRequests() throws {
        let text = "server:\n  connections: { maxPerClient: 64, maxActiveRequests: 32 }\n"
        #expect(try load(text).get().server.connections.maxActiveRequests == 32)
        let overridden = try load(text, environment: ["HUB_SERVER_CONNECTIONS_MAX_ACTIVE_REQUESTS": "1000"]).get()
        #expect(overridden.server.connections.maxActiveRequests == 1000)
        for value in ["0", "100001", "many"] {
            let result = load("server:\n  connections:\n    maxActiveRequests: \(value)\n")
            #expect(result.errors.count == 1, "\(errorLines(result))")
            #expect(
                result.errors.contains {
                    $0.line == 3 && $0.column == 24
                        && $0.message.contains(
                            "'server.connections.maxActiveRequests' must be a whole number from 1 to 100000")
                },
                "\(value): \(errorLines(result))")
        }
    }

    @Test("every wrong value is reported at its line:column, saying what is allowed")
    func mistakes() {
        let result = load(
            """
            server:
              connections:
                headerTimeout: 0s
                bodyTimout: 30s
                idleTimeout: soon
                max: 0
              trustedProxies: [proxy.internal]
            """)
        let expected: [(Int, Int, String)] = [
            (3, 20, "'server.connections.headerTimeout' must be from 1s to 1h"),
            (4, 5, "did you mean 'bodyTimeout'"),
            (5, 18, "must be a duration such as 30s"),
            (6, 10, "'server.connections.max' must be a whole number from 1"),
            (7, 20, "takes IP addresses such as 127.0.0.1 or ::1, not 'proxy.internal'"),
        ]
        #expect(result.errors.count == expected.count, "\(errorLines(result))")
        for (line, column, text) in expected {
            #expect(
                result.errors.contains { $0.line == line && $0.column == column && $0.message.contains(text) },
                "expected \(line):\(column) \(text) in \(errorLines(result))")
        }
    }
}

@Suite("hub.yaml rateLimits")
struct RateLimitSettingsTests {
    @Test("top-level limits apply to every app; an app's own override single keys")
    func values() throws {
        let file = try load(
            """
            rateLimits: { publisherKey: 100/s, clientIP: off }
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.example.a] } }
                rateLimits: { userPublishes: 5/m, publisherKey: 2000/h }
            """
        ).get()
        #expect(file.rateLimits.publisherKey == .limit(count: 100, period: .seconds(1)))
        #expect(file.rateLimits.clientIP == .off)
        #expect(file.rateLimits.deviceToken == .inherit)
        let app = try #require(file.appRateLimits["a.example.com"]).over(file.rateLimits)
        #expect(app.publisherKey == .limit(count: 2000, period: .seconds(3600)))
        #expect(app.userPublishes == .limit(count: 5, period: .seconds(60)))
        #expect(app.clientIP == .off)
        #expect(app.deviceToken == .inherit)
    }

    @Test("a wrong rate or key is reported at its line:column")
    func mistakes() {
        let result = load(
            """
            rateLimits: { publisherKey: fast, deviceTokens: 5/m }
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.example.a] } }
                rateLimits: { userPublishes: 0/m }
            """)
        let expected: [(Int, Int, String)] = [
            (1, 29, "'rateLimits.publisherKey' must be a rate such as 100/s, 600/m or 5000/h"),
            (1, 35, "did you mean 'deviceToken'"),
            (5, 34, "'apps[0].rateLimits.userPublishes' must be a rate"),
        ]
        #expect(result.errors.count == expected.count, "\(errorLines(result))")
        for (line, column, text) in expected {
            #expect(
                result.errors.contains { $0.line == line && $0.column == column && $0.message.contains(text) },
                "expected \(line):\(column) \(text) in \(errorLines(result))")
        }
    }
}
