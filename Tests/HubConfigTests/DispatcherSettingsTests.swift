import HubCore
import Testing

@testable import HubConfig

@Suite("hub.yaml dispatcher section")
struct DispatcherSettingsTests {
    let app = "apps:\n  - id: a.example.com\n    platforms: { ios: { appIds: [com.a.b] } }\n"

    @Test("defaults without the section are the dispatcher's own")
    func defaults() throws {
        let file = try load(app).get()
        let configuration = file.hubConfiguration().dispatcher
        let defaults = DispatcherConfiguration()
        #expect(configuration.concurrency == defaults.concurrency)
        #expect(configuration.laneConcurrency.isEmpty)
        #expect(configuration.lease == defaults.lease)
        #expect(configuration.maxAttempts == defaults.maxAttempts)
        #expect(configuration.maxAge == defaults.maxAge)
    }

    @Test("every key reaches the dispatcher's configuration; a lane's own concurrency wins")
    func keys() throws {
        let text = """
            dispatcher:
              concurrency: 64
              lanes: { apns: 512, fcm: 1_000 }
              lease: 30s
              maxAttempts: 5
              maxAge: 2h

            """
        let configuration = try load(text + app).get().hubConfiguration().dispatcher
        #expect(configuration.concurrency == 64)
        #expect(configuration.concurrency(for: .init("apns")) == 512)
        #expect(configuration.concurrency(for: .init("fcm")) == 1_000)
        #expect(configuration.concurrency(for: .init("wns")) == 64)
        #expect(configuration.lease == .seconds(30))
        #expect(configuration.maxAttempts == 5)
        #expect(configuration.maxAge == .seconds(7200))
    }

    @Test("bad values and unknown transports are reported at their line and column")
    func mistakes() {
        let text = """
            dispatcher:
              concurrency: 0
              lanes: { apsn: 10, fcm: many }
              lease: 1s
              maxAttempts: 1000
              maxAge: 10s
              batch: 5

            """
        let lines = errorLines(load(text + app))
        let expected = [
            "hub.yaml:2:16: error: 'dispatcher.concurrency' must be a whole number from 1 to 10000",
            "hub.yaml:3:12: error: unknown key 'apsn' in 'dispatcher.lanes'; did you mean 'apns'?",
            "hub.yaml:3:27: error: 'dispatcher.lanes.fcm' must be a whole number from 1 to 10000",
            "hub.yaml:4:10: error: 'dispatcher.lease' must be from 2s to 5m",
            "hub.yaml:5:16: error: 'dispatcher.maxAttempts' must be a whole number from 1 to 100",
            "hub.yaml:6:11: error: 'dispatcher.maxAge' must be from 1m to 30d",
            "hub.yaml:7:3: error: unknown key 'batch' in 'dispatcher'",
        ]
        for line in expected { #expect(lines.contains { $0.hasPrefix(line) }, "\(line) in \(lines)") }
        #expect(lines.count == expected.count, "\(lines)")
    }

    @Test("environment overrides: HUB_DISPATCHER_CONCURRENCY, HUB_DISPATCHER_LANES_APNS")
    func environment() throws {
        let file = try load(
            "dispatcher: { concurrency: 64 }\n" + app,
            environment: ["HUB_DISPATCHER_CONCURRENCY": "128", "HUB_DISPATCHER_LANES_APNS": "300"]
        ).get()
        #expect(file.dispatcher.concurrency == 128)
        #expect(file.dispatcher.lanes == [.init("apns"): 300])
        let unknown = errorLines(load(app, environment: ["HUB_DISPATCHER_LANES_APSN": "3"]))
        #expect(unknown.contains { $0.contains("HUB_DISPATCHER_LANES_APSN") }, "\(unknown)")
    }
}
