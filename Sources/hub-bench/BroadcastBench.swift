import ArgumentParser
import Foundation
import HubCore
import HubSQLite
import Synchronization

/// `hub-bench broadcast`: a broadcast to every user of an app, in this process on a SQLite file
/// store, each user with one endpoint on a transport that only counts (the hub's own cost, not a
/// provider's).
struct BroadcastBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract:
            "A broadcast to --users users: creation latency, publishes and deliveries/s, RSS, single-publish p99.",
        discussion: """
            Seeds --users users with one endpoint each (a counting transport, --send-micros per send), \
            measures single publishes to another user alone, then creates an all-users broadcast and \
            measures how long its creation takes (what the 202 waits for), how fast its users are \
            published and their deliveries sent, the process's RSS growth, and single publishes while \
            it runs. Runs the Hub in this process (no HTTP). Build with -c release for figures that count.
            """)

    @Option(help: "Users in the audience, one endpoint each.") var users = 10_000
    @Option(help: "Users per chunk.") var chunk = 500
    @Option(help: "Simulated time of one send, in microseconds.") var sendMicros = 0
    @Option(help: "Single publishes per second while the broadcast runs.") var probeRate = 100

    static let app = CrossDeviceApp(id: "bench.example", name: "Bench", platforms: [.ios: ["com.example.bench"]])
    static let transport = TransportID("bench")

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hub-bench-broadcast-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteStore(path: folder.appendingPathComponent("hub.sqlite").path)
        let transport = CountingTransport(id: Self.transport, micros: sendMicros)
        var configuration = HubConfiguration(apps: [Self.app])
        configuration.broadcasts.chunkSize = chunk
        let hub = try Hub(configuration: configuration, store: store, transports: [transport])

        let seeding = ContinuousClock.now
        try await Self.seed(store, users: users)
        print("hub-bench broadcast — \(users) users × 1 endpoint, chunks of \(chunk), SQLite file store")
        print(String(format: "seeded in %.1f s", (ContinuousClock.now - seeding).seconds))

        let running = Task { try? await hub.run() }
        defer { running.cancel() }
        let alone = try await Self.probe(hub, count: 200, rate: probeRate, until: nil)
        print(String(format: "single publishes alone: p50 %.2f ms, p99 %.2f ms", alone.p50, alone.p99))
        await Self.waitForDeliveries(transport, count: 200)

        let rssBefore = Self.residentMegabytes()
        transport.reset()
        let started = ContinuousClock.now
        let broadcast = try await hub.createBroadcast(
            app: Self.app.id, audience: .allUsers,
            draft: NotificationDraft(
                appNotificationId: "bench-broadcast",
                payload: NotificationPayload(visualContent: VisualContent(title: "Outage", body: "We are on it"))))
        let created = ContinuousClock.now - started
        let peak = Mutex(rssBefore)
        let done = StopFlag()
        async let during = Self.probe(hub, count: Int.max, rate: probeRate, until: done)
        while true {
            peak.withLock { $0 = max($0, Self.residentMegabytes()) }
            let current = try await hub.broadcast(app: Self.app.id, id: broadcast.id)
            if current.status == .done { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let expanded = ContinuousClock.now - started
        await Self.waitForDeliveries(transport, count: users)
        let delivered = ContinuousClock.now - started
        done.stop()
        let probes = try await during
        let grown = peak.withLock { $0 } - rssBefore
        print(String(format: "created (the 202) in %.1f ms", created.seconds * 1000))
        print(
            String(
                format: "published %d users in %.2f s: %.0f users/s", users, expanded.seconds,
                Double(users) / expanded.seconds))
        print(
            String(
                format: "delivered %d (the broadcast's and the probes') in %.2f s: %.0f deliveries/s", transport.count,
                delivered.seconds,
                Double(transport.count) / delivered.seconds))
        print(String(format: "RSS growth during the broadcast: %.1f MB (target ≤ 100 MB)", grown))
        print(
            String(
                format: "single publishes during it (%d): p50 %.2f ms, p99 %.2f ms (%.1f × alone; target ≤ 2 ×)",
                probes.count, probes.p50, probes.p99, alone.p99 > 0 ? probes.p99 / alone.p99 : 0))
    }

    /// One endpoint per user, written `width` at a time (the store commits them in groups).
    static func seed(_ store: SQLiteStore, users: Int, width: Int = 64) async throws {
        let now = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<users {
                if index >= width { try await group.next() }
                group.addTask {
                    let user = "user-\(index)"
                    _ = try await store.upsertEndpoint(
                        Endpoint(
                            id: "phone", appId: app.id, userId: user, platform: .ios,
                            platformAppId: "com.example.bench",
                            transport: transport, token: "token-\(index)", registeredAt: now))
                }
            }
            try await group.waitForAll()
        }
        _ = try await store.upsertEndpoint(
            Endpoint(
                id: "phone", appId: app.id, userId: "~probe", platform: .ios, platformAppId: "com.example.bench",
                transport: transport, token: "token-probe", registeredAt: now))
    }

    struct Latencies {
        var count: Int
        var p50: Double
        var p99: Double
    }

    /// Single publishes to the probe user at `rate` per second: `count` of them, or until `stop`.
    static func probe(_ hub: Hub, count: Int, rate: Int, until stop: StopFlag?) async throws -> Latencies {
        var samples: [Double] = []
        let interval = Duration.microseconds(1_000_000 / Int64(max(1, rate)))
        var index = 0
        while index < count && !(stop?.isStopped ?? false) {
            let start = ContinuousClock.now
            _ = try await hub.publish(
                app: app.id, user: "~probe",
                NotificationDraft(appNotificationId: "probe-\(index)", payload: NotificationPayload(rawContent: "x")))
            let took = ContinuousClock.now - start
            samples.append(took.seconds * 1000)
            index += 1
            if took < interval { try await Task.sleep(for: interval - took) }
        }
        let sorted = samples.sorted()
        func at(_ quantile: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * quantile))]
        }
        return Latencies(count: sorted.count, p50: at(0.5), p99: at(0.99))
    }

    static func waitForDeliveries(_ transport: CountingTransport, count: Int) async {
        while transport.count < count { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// VmRSS of this process, in MB.
    static func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
        return (kilobytes.flatMap { Double($0) } ?? 0) / 1024
    }
}

/// A transport that counts its sends and answers each accepted after `micros`.
final class CountingTransport: Transport {
    let id: TransportID
    let micros: Int
    private let sent = Atomic<Int>(0)

    init(id: TransportID, micros: Int) {
        self.id = id
        self.micros = micros
    }

    var count: Int { sent.load(ordering: .acquiring) }

    func reset() { sent.store(0, ordering: .releasing) }

    func send(_ delivery: OutboundDelivery) async -> DeliveryOutcome {
        if micros > 0 { try? await Task.sleep(for: .microseconds(micros)) }
        sent.add(1, ordering: .releasing)
        return .accepted
    }
}

/// Tells a probe loop to stop.
final class StopFlag: Sendable {
    private let stopped = Atomic<Bool>(false)
    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }
}
