import ArgumentParser
import Foundation
import HubCore
import HubPolling
import HubSQLite
import Synchronization

/// Durable publishes per second and publish-to-wake latency through the real store and dispatcher.
struct PublishBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Durable publishes/s, then publish-to-wake latency p50/p99 with polling endpoints.",
        discussion: "Run a release build: swift run -c release hub bench publish")

    @Option(help: "Users, each with --endpoints polling endpoints.") var users = 1000
    @Option(help: "Polling endpoints per user.") var endpoints = 3
    @Option(help: "Publishes in the throughput phase.") var publishes = 20_000
    @Option(help: "Concurrent publishers in the throughput phase.") var concurrency = 64
    @Option(help: "Publishes per second in the latency phase.") var rate = 1000
    @Option(help: "Seconds of the latency phase.") var seconds = 5

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("bench.sqlite").path)
        try await store.migrate()
        let figures = try await PublishBenchmark(
            store: store, users: users, endpointsPerUser: endpoints, label: "sqlite (WAL, synchronous=FULL)"
        ).run(publishes: publishes, concurrency: concurrency, rate: rate, seconds: seconds)
        print(figures)
    }
}

/// The publish benchmark on any store, so every store reports the same figures.
struct PublishBenchmark {
    static let app = CrossDeviceApp(
        id: "bench.example.com", name: "Bench", platforms: [.web: ["https://bench.example.com"]])
    let store: any Store
    let users: Int
    let endpointsPerUser: Int
    let label: String

    func run(publishes: Int, concurrency: Int, rate: Int, seconds: Int) async throws -> String {
        let signals = FeedSignals()
        var configuration = HubConfiguration(apps: [Self.app])
        configuration.dispatcher.idleInterval = .milliseconds(200)
        let hub = try Hub(
            configuration: configuration, store: store, transports: [PollingTransport(signals: signals)],
            signals: signals)
        for user in 0..<users {
            for endpoint in 0..<endpointsPerUser {
                _ = try await hub.registerEndpoint(
                    app: Self.app.id, user: "user\(user)", id: "e\(endpoint)",
                    EndpointRegistration(platform: .web, appId: "https://bench.example.com", transport: .polling))
            }
        }
        var lines = ["hub bench publish — \(label), \(users) users × \(endpointsPerUser) polling endpoints"]
        let hubTask = Task { try await hub.run() }
        defer { hubTask.cancel() }

        // Phase 1: throughput of durable publishes (each returned publish is committed).
        let counter = Shared(0)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    while true {
                        let index = counter.withLock { value -> Int in
                            value += 1
                            return value
                        }
                        guard index <= publishes else { return }
                        _ = try await hub.publish(
                            app: Self.app.id, user: "user\((index * 7 + worker) % users)", Self.draft("t\(index)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = (ContinuousClock.now - start).seconds
        lines.append(
            String(
                format: "durable publishes: %d in %.2f s = %.0f publishes/s (%d concurrent publishers)",
                publishes, elapsed, Double(publishes) / elapsed, concurrency))

        // Let the dispatcher drain the taps of phase 1 before measuring latency.
        while try await store.deliveryStatistics().pending > 0 { try await Task.sleep(for: .milliseconds(50)) }

        // Phase 2: publish-to-wake latency at a steady rate, every endpoint long-polling.
        let latencies = Shared<[Double]>([])
        let stop = Shared(false)
        let publishTimes = Shared<[String: ContinuousClock.Instant]>([:])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<users {
                for endpoint in 0..<endpointsPerUser {
                    group.addTask {
                        let key = FeedKey(appId: Self.app.id, userId: "user\(user)")
                        var version = try await store.feed(key, after: 0, limit: 1_000_000).version
                        while !stop.withLock({ $0 }) {
                            let page = try await hub.feed(
                                app: Self.app.id, user: "user\(user)", after: version, limit: 1000,
                                wait: .seconds(1), endpoint: "e\(endpoint)")
                            let now = ContinuousClock.now
                            for change in page.changes {
                                if let sent = publishTimes.withLock({ $0[change.appNotificationId] }) {
                                    latencies.withLock { $0.append((now - sent).seconds * 1000) }
                                }
                            }
                            version = page.version
                        }
                    }
                }
            }
            try await Task.sleep(for: .seconds(1))  // let every long-poll start waiting
            let interval = Duration.seconds(1) / rate
            var next = ContinuousClock.now
            for index in 0..<(rate * seconds) {
                next += interval
                try await Task.sleep(until: next, clock: .continuous)
                let id = "l\(index)"
                publishTimes.withLock { $0[id] = ContinuousClock.now }
                _ = try await hub.publish(app: Self.app.id, user: "user\(index % users)", Self.draft(id))
            }
            try await Task.sleep(for: .seconds(2))
            stop.withLock { $0 = true }
            try await group.waitForAll()
        }
        let sorted = latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let expected = rate * seconds * endpointsPerUser
        lines.append(
            String(
                format: "publish-to-wake at %d publishes/s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d of %d wakes)",
                rate, percentile(0.5), percentile(0.99), sorted.last ?? .nan, sorted.count, expected))
        lines.append("resident memory: \(Self.residentMegabytes()) MB")
        return lines.joined(separator: "\n")
    }

    static func draft(_ id: String) -> NotificationDraft {
        NotificationDraft(
            appNotificationId: id, payload: NotificationPayload(visualContent: VisualContent(title: "Bench", body: id)))
    }

    /// VmRSS of this process, from /proc.
    static func residentMegabytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kilobytes / 1024
    }
}

/// A value shared between tasks behind a lock.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}
