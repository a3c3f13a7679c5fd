import HubCore
import Testing

@testable import HubConfig

/// Issue 46: the endpoint limit and the lanes' fair shares in hub.yaml.
@Suite("hub.yaml isolation settings")
struct IsolationSettingsTests {
    let app = "apps:\n  - id: a.example.com\n    platforms: { ios: { appIds: [com.a.b] } }\n"

    @Test("defaults: 50 endpoints per user, a quarter of a lane per user, half per host, 5 s drain")
    func defaults() throws {
        let configuration = try load(app).get().hubConfiguration()
        #expect(configuration.maxEndpointsPerUser == 50)
        #expect(configuration.apps.first?.maxEndpointsPerUser == nil)
        #expect(configuration.dispatcher.maxUserShare == 0.25)
        #expect(configuration.dispatcher.maxHostShare == 0.5)
        #expect(configuration.dispatcher.shutdownDrainTimeout == .seconds(5))
    }

    @Test("every key reaches the hub's configuration; an app's own limit and weight")
    func keys() throws {
        let text = """
            limits: { maxEndpointsPerUser: 20 }
            dispatcher: { userShare: 0.1, hostShare: 0.75, drainTimeout: 2s }
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.a.b] } }
                maxEndpointsPerUser: 5
                dispatchWeight: 3

            """
        let configuration = try load(text).get().hubConfiguration()
        #expect(configuration.maxEndpointsPerUser == 20)
        #expect(configuration.apps.first?.maxEndpointsPerUser == 5)
        #expect(configuration.apps.first?.dispatchWeight == 3)
        #expect(configuration.dispatcher.maxUserShare == 0.1)
        #expect(configuration.dispatcher.maxHostShare == 0.75)
        #expect(configuration.dispatcher.shutdownDrainTimeout == .seconds(2))
    }

    @Test("bad values are reported at their line and column")
    func mistakes() {
        let text = """
            limits: { maxEndpointsPerUser: 0 }
            dispatcher: { userShare: 2, hostShare: none, drainTimeout: 0s }
            apps:
              - id: a.example.com
                platforms: { ios: { appIds: [com.a.b] } }
                dispatchWeight: 0

            """
        let lines = errorLines(load(text))
        let expected = [
            "hub.yaml:1:32: error: 'limits.maxEndpointsPerUser' must be a whole number from 1 to 10000",
            "hub.yaml:2:26: error: 'dispatcher.userShare' must be a fraction of the lane above 0 and at most 1",
            "hub.yaml:2:40: error: 'dispatcher.hostShare' must be a fraction of the lane above 0 and at most 1",
            "hub.yaml:2:60: error: 'dispatcher.drainTimeout' must be from 1s to 5m",
            "hub.yaml:6:21: error: 'apps[0].dispatchWeight' must be a whole number from 1 to 100",
        ]
        for line in expected { #expect(lines.contains { $0.hasPrefix(line) }, "\(line) in \(lines)") }
        #expect(lines.count == expected.count, "\(lines)")
    }
}
