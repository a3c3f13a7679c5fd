import HubSQLite
import HubTesting
import Testing

@testable import HubCore

/// How deep each transport's lane is: hub.yaml's lane entry, else its `concurrency`, else the
/// transport's own preference, else the hub's default.
@Suite("dispatcher: lane concurrency")
struct LaneConcurrencyTests {
    private static func lanes(
        _ configure: (inout DispatcherConfiguration) -> Void = { _ in }
    ) throws -> [String: Int] {
        var configuration = HubConfiguration(apps: [TestHub.app], instanceID: "lanes", storeTimeout: .seconds(30))
        configure(&configuration.dispatcher)
        let deep = RecordingTransport(id: .apns, platforms: [.ios], preferredConcurrency: 512)
        let plain = RecordingTransport(id: TransportID("fcm"), platforms: [.android])
        let hub = try Hub(
            configuration: configuration, store: try SQLiteStore.inMemory(), transports: [deep, plain],
            logger: .init(label: "hub"))
        return Dictionary(uniqueKeysWithValues: hub.dispatcher.lanes.map { ($0.name, $0.concurrency) })
    }

    @Test("a transport's preference sets its lane; a transport without one gets the hub's default")
    func preference() throws {
        let lanes = try Self.lanes()
        #expect(lanes["apns"] == 512)
        #expect(lanes["fcm"] == DispatcherConfiguration.defaultConcurrency)
        #expect(lanes["other"] == 4)
    }

    @Test("dispatcher.concurrency overrides every preference; dispatcher.lanes overrides both")
    func configurationWins() throws {
        let everyLane = try Self.lanes { $0.concurrency = 64 }
        #expect(everyLane["apns"] == 64)
        #expect(everyLane["fcm"] == 64)
        let oneLane = try Self.lanes {
            $0.concurrency = 64
            $0.laneConcurrency = [.apns: 1_000]
        }
        #expect(oneLane["apns"] == 1_000)
        #expect(oneLane["fcm"] == 64)
    }
}
