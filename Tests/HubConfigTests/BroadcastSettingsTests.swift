import HubCore
import Testing

@testable import HubConfig

@Suite("hub.yaml broadcasts section")
struct BroadcastSettingsTests {
    let app = "apps:\n  - id: a.example.com\n    platforms: { ios: { appIds: [com.a.b] } }\n"

    @Test("defaults without the section are the expander's own")
    func defaults() throws {
        let configuration = try load(app).get().hubConfiguration().broadcasts
        let defaults = BroadcastConfiguration()
        #expect(configuration.enabled == defaults.enabled)
        #expect(configuration.chunkSize == defaults.chunkSize)
        #expect(configuration.usersPerWrite == defaults.usersPerWrite)
        #expect(configuration.lease == defaults.lease)
        #expect(configuration.pollInterval == defaults.pollInterval)
        #expect(configuration.concurrentChunks == 1)
        #expect(configuration.maxUsersPerSecond == nil)
    }

    @Test("every key reaches the expander's configuration")
    func keys() throws {
        let text = """
            broadcasts:
              enabled: false
              chunkSize: 1_000
              usersPerWrite: 250
              lease: 2m
              pollInterval: 5s
              concurrentChunks: 4
              maxUsersPerSecond: 20_000

            """
        let configuration = try load(text + app).get().hubConfiguration().broadcasts
        #expect(configuration.enabled == false)
        #expect(configuration.chunkSize == 1_000)
        #expect(configuration.usersPerWrite == 250)
        #expect(configuration.lease == .seconds(120))
        #expect(configuration.pollInterval == .seconds(5))
        #expect(configuration.concurrentChunks == 4)
        #expect(configuration.maxUsersPerSecond == 20_000)
    }

    @Test("bad values and unknown keys are reported at their line and column")
    func mistakes() {
        let text = """
            broadcasts:
              enabled: maybe
              chunkSize: 5000
              lease: 1s
              pollInterval: 2h
              concurrentChunks: 0
              maxUsersPerSecond: fast
              chunk: 5
              usersPerWrite: 0

            """
        let lines = errorLines(load(text + app))
        let expected = [
            "hub.yaml:2:12: error: 'broadcasts.enabled' must be one of true, false, not 'maybe'",
            "hub.yaml:3:14: error: 'broadcasts.chunkSize' must be a whole number from 1 to 1000",
            "hub.yaml:4:10: error: 'broadcasts.lease' must be from 5s to 1h",
            "hub.yaml:5:17: error: 'broadcasts.pollInterval' must be from 1s to 1m",
            "hub.yaml:6:21: error: 'broadcasts.concurrentChunks' must be a whole number from 1 to 16",
            "hub.yaml:7:22: error: 'broadcasts.maxUsersPerSecond' must be a whole number from 1 to 10000000",
            "hub.yaml:8:3: error: unknown key 'chunk' in 'broadcasts'",
            "hub.yaml:9:18: error: 'broadcasts.usersPerWrite' must be a whole number from 1 to 1000",
        ]
        for line in expected { #expect(lines.contains { $0.hasPrefix(line) }, "\(line) in \(lines)") }
        #expect(lines.count == expected.count, "\(lines)")
    }

    @Test("environment overrides: HUB_BROADCASTS_CHUNK_SIZE, HUB_BROADCASTS_ENABLED")
    func environment() throws {
        let file = try load(
            "broadcasts: { chunkSize: 100 }\n" + app,
            environment: ["HUB_BROADCASTS_CHUNK_SIZE": "250", "HUB_BROADCASTS_ENABLED": "false"]
        ).get()
        #expect(file.broadcasts.chunkSize == 250)
        #expect(file.broadcasts.enabled == false)
        let unknown = errorLines(load(app, environment: ["HUB_BROADCASTS_CHUNKS": "3"]))
        #expect(unknown.contains { $0.contains("HUB_BROADCASTS_CHUNKS") }, "\(unknown)")
    }
}
