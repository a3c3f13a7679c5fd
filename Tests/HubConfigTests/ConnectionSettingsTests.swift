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
