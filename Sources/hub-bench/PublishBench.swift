import ArgumentParser
import Foundation
import HubCore
import HubPolling
import HubPostgres
import HubSQLite
import HubTesting
import Logging
import Synchronization

/// Durable publishes per second and publish-to-wake latency through the real store and dispatcher.
struct PublishBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Durable publishes/s, then publish-to-wake latency p50/p99 with polling endpoints.",
        discussion: """
            Run a release build: swift run -c release hub-bench publish. PostgreSQL: pass --store postgres \
            (or --compare) and the URL in HUB_DATABASE_URL (or --database-url); each run uses a schema of its \
            own and drops it. scripts/with-postgres starts a throw-away server and exports HUB_TEST_DATABASE_URL, \
            which is used too.
            """)

    @Option(help: "Users, each with --endpoints polling endpoints.") var users = 1000
    @Option(help: "Polling endpoints per user.") var endpoints = 3
    @Option(help: "Publishes in the throughput phase.") var publishes = 20_000
    @Option(help: "Concurrent publishers in the throughput phase.") var concurrency = 64
    @Option(help: "Publishes per second in the latency phase.") var rate = 1000
    @Option(help: "Seconds of the latency phase.") var seconds = 5
    @Option(help: "The store: sqlite or postgres.") var store = "sqlite"
    @Option(help: "PostgreSQL URL; default $HUB_DATABASE_URL, then $HUB_TEST_DATABASE_URL (a URL here shows in ps).")
    var databaseURL: String?
    @Option(help: "Hub instances sharing the PostgreSQL database (1 or 2): publishes alternate between them.")
    var instances = 1
    @Option(help: "PostgreSQL connections per instance.") var poolSize = 16
    @Flag(help: "Run sqlite, then postgres with 1 and with 2 instances, and print every figure.") var compare = false

    func validate() throws {
        guard ["sqlite", "postgres"].contains(store) else { throw ValidationError("--store is sqlite or postgres") }
        guard (1...2).contains(instances) else { throw ValidationError("--instances is 1 or 2") }
        guard store == "sqlite" ? instances == 1 : true else {
            throw ValidationError("several instances need --store postgres (SQLite is one process's store)")
        }
        if (store == "postgres" || compare) && url == nil {
            throw ValidationError("give the PostgreSQL URL in HUB_DATABASE_URL or --database-url")
        }
    }

    private var url: Secret? { BenchCommand.databaseURL(option: databaseURL) }

    func run() async throws {
        MallocTuning.apply()  // as `hub serve` runs
        let runs: [(store: String, instances: Int)] =
            compare ? [("sqlite", 1), ("postgres", 1), ("postgres", 2)] : [(store, instances)]
        for (index, setup) in runs.enumerated() {
            let figures = try await setup.store == "sqlite" ? runSQLite() : runPostgres(instances: setup.instances)
            // Unbuffered, so each run's figures show as soon as it ends, also through a pipe.
            FileHandle.standardOutput.write(Data(((index > 0 ? "\n" : "") + figures + "\n").utf8))
        }
    }

    private func runSQLite() async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("bench.sqlite").path)
        try await store.migrate()
        return try await benchmark(
            [(store, FeedSignals())], label: "sqlite (WAL, synchronous=FULL)")
    }

    private func runPostgres(instances count: Int) async throws -> String {
        guard let url else { throw ValidationError("no PostgreSQL URL") }
        return try await Self.onPostgres(url: url, instances: count, poolSize: poolSize) { pairs, label in
            try await PublishBenchmark(instances: pairs, users: users, endpointsPerUser: endpoints, label: label)
                .run(publishes: publishes, concurrency: concurrency, rate: rate, seconds: seconds)
        }.text
    }

    /// Runs `body` with `count` instances, each with its own store (pool and relay) and signals, on
    /// one fresh schema of the server at `url`, dropped afterwards.
    static func onPostgres(
        url: Secret, instances count: Int, poolSize: Int,
        _ body: @Sendable @escaping ([(any Store, FeedSignals)], String) async throws -> PublishBenchmark.Result
    ) async throws -> PublishBenchmark.Result {
        let schema = "bench_" + String(UInt64.random(in: 1 ... .max), radix: 16)
        let stores = try (0..<count).map { _ in
            PostgresStore(
                configuration: try .init(url: url, poolSize: poolSize, schema: schema),
                logger: PublishBenchmark.quietLogger)
        }
        try await stores[0].migrate()
        let outcome: Swift.Result<PublishBenchmark.Result, any Error>
        do {
            outcome = .success(
                try await withThrowingTaskGroup(of: PublishBenchmark.Result?.self) { group in
                    for store in stores {
                        group.addTask {
                            await store.run()
                            return nil
                        }
                    }
                    defer { group.cancelAll() }
                    let pairs = stores.map { store in
                        let signals = FeedSignals()
                        store.relay(into: signals)
                        return (store as any Store, signals)
                    }
                    // Wake-ups go only to instances heard on the channel: start once all know each other.
                    let start = ContinuousClock.now
                    while stores.contains(where: { $0.relayPeerCount < count - 1 }),
                        ContinuousClock.now - start < .seconds(10)
                    {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    let label = "postgres, \(count) instance\(count == 1 ? "" : "s") (pool \(poolSize) each)"
                    return try await body(pairs, label)
                })
        } catch {
            outcome = .failure(error)
        }
        try? await stores[0].dropSchema()
        return try outcome.get()
    }

    private func benchmark(_ instances: [(any Store, FeedSignals)], label: String) async throws -> String {
        try await PublishBenchmark(
            instances: instances, users: users, endpointsPerUser: endpoints, label: label
        ).run(publishes: publishes, concurrency: concurrency, rate: rate, seconds: seconds).text
    }
}

/// The publish benchmark on any store, so every store reports the same figures.
///
/// With several instances (hubs on one shared store, each with its own signals), the publishes of
/// user `u` go through instance `u % n` and its devices long-poll instance `(u + 1) % n`: with
/// two instances every wake-up crosses from one instance to the other.
struct PublishBenchmark {
    static let app = CrossDeviceApp(
        id: "bench.example.com", name: "Bench", platforms: [.web: ["https://bench.example.com"]])
    let instances: [(store: any Store, signals: FeedSignals)]
    let users: Int
    let endpointsPerUser: Int
    let label: String

    /// The figures of ``run(publishes:concurrency:rate:seconds:)``: its report, and publish-to-wake
    /// p50/p99 in milliseconds.
    struct Result {
        var text: String
        var wakeP50: Double
        var wakeP99: Double
    }

    func run(publishes: Int, concurrency: Int, rate: Int, seconds: Int) async throws -> Result {
        var configuration = HubConfiguration(apps: [Self.app])
        configuration.dispatcher.idleInterval = .milliseconds(200)
        // The bench chooses its endpoints per user; the hub's limit is not what it measures.
        configuration.maxEndpointsPerUser = nil
        let hubs = try instances.enumerated().map { index, instance in
            var named = configuration
            named.instanceID = "bench-\(index)"
            return try Hub(
                configuration: named, store: instance.store,
                transports: [PollingTransport(signals: instance.signals)], signals: instance.signals,
                logger: Self.quietLogger)
        }
        let store = instances[0].store
        for user in 0..<users {
            for endpoint in 0..<endpointsPerUser {
                _ = try await hubs[0].registerEndpoint(
                    app: Self.app.id, user: "user\(user)", id: "e\(endpoint)",
                    EndpointRegistration(platform: .web, appId: "https://bench.example.com", transport: .polling))
            }
        }
        var lines = ["hub-bench publish — \(label), \(users) users × \(endpointsPerUser) polling endpoints"]
        let hubTasks = hubs.map { hub in Task { try await hub.run() } }
        // On an error; a finished run stops the hubs below and waits for their last statistics.
        defer { for task in hubTasks { task.cancel() } }
        let publisher: @Sendable (_ user: Int) -> Hub = { hubs[$0 % hubs.count] }

        // Phase 1: throughput of durable publishes (each returned publish is committed).
        let counter = Shared(0)
        let start = ContinuousClock.now
        let throughputUsage = ProcessUsage()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    while true {
                        let index = counter.withLock { value -> Int in
                            value += 1
                            return value
                        }
                        guard index <= publishes else { return }
                        let user = (index * 7 + worker) % users
                        _ = try await publisher(user).publish(
                            app: Self.app.id, user: "user\(user)", Self.draft("t\(index)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = (ContinuousClock.now - start).seconds
        lines.append(
            String(
                format: "durable publishes: %d in %.2f s = %.0f publishes/s (%d concurrent publishers); "
                    + "%.3f CPU-s per 1,000",
                publishes, elapsed, Double(publishes) / elapsed, concurrency,
                throughputUsage.elapsedSelf * 1000 / Double(publishes)))

        // Let the dispatchers drain the taps of phase 1 before measuring latency.
        while try await store.deliveryStatistics().pending > 0 { try await Task.sleep(for: .milliseconds(50)) }

        // Phase 2: publish-to-wake latency at a steady rate, every endpoint long-polling (30 s,
        // like a device; the polls are cancelled at the end). Publishes start on schedule,
        // concurrently, whether or not the previous ones have returned.
        let latencies = Shared<[Double]>([])
        let stop = Shared(false)
        let publishTimes = Shared<[String: ContinuousClock.Instant]>([:])
        var achievedRate = 0.0
        var latencyUsage = ProcessUsage()
        var latencyCPU = 0.0
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<users {
                let poller = hubs[(user + 1) % hubs.count]
                for endpoint in 0..<endpointsPerUser {
                    group.addTask {
                        let key = FeedKey(appId: Self.app.id, userId: "user\(user)")
                        var version = try await store.feed(key, after: 0, limit: 1_000_000).version
                        while !stop.withLock({ $0 }) {
                            let page: FeedPage
                            do {
                                // Parks in the instance's waiting room, as the server's long-polls do.
                                page = try await poller.longPoll(
                                    app: Self.app.id, user: "user\(user)", after: version, limit: 1000,
                                    wait: .seconds(30), endpoint: "e\(endpoint)")
                            } catch  where stop.withLock({ $0 }) {
                                return
                            }
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
            // Measure only once every endpoint has caught up and waits: with 20 notifications a feed
            // that first sync of 3,000 endpoints takes a few seconds, and publishes during it
            // measure the catch-up, not a wake-up.
            let waiting = users * endpointsPerUser
            let deadline = ContinuousClock.now + .seconds(120)
            while instances.map(\.signals.waiterCount).reduce(0, +) < waiting && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(200))
            let interval = Duration.seconds(1) / rate
            let started = ContinuousClock.now
            latencyUsage = ProcessUsage()
            try await withThrowingTaskGroup(of: Void.self) { publishes in
                var next = started
                for index in 0..<(rate * seconds) {
                    next += interval
                    try await Task.sleep(until: next, clock: .continuous)
                    publishes.addTask {
                        let id = "l\(index)"
                        publishTimes.withLock { $0[id] = ContinuousClock.now }
                        let user = index % users
                        _ = try await publisher(user).publish(app: Self.app.id, user: "user\(user)", Self.draft(id))
                    }
                }
                try await publishes.waitForAll()
            }
            achievedRate = Double(rate * seconds) / (ContinuousClock.now - started).seconds
            latencyCPU = latencyUsage.elapsedSelf
            try await Task.sleep(for: .seconds(2))
            stop.withLock { $0 = true }
            group.cancelAll()
            try await group.waitForAll()
        }
        let sorted = latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let expected = rate * seconds * endpointsPerUser
        let across = hubs.count > 1 ? ", long-polls on the other instance" : ""
        lines.append(
            String(
                format:
                    "publish-to-wake at %d publishes/s (%.0f/s achieved)%@: p50 %.2f ms, p99 %.2f ms, max %.2f ms "
                    + "(%d of %d wakes); %.3f CPU-s per 1,000 publishes with their wake-ups",
                rate, achievedRate, across, percentile(0.5), percentile(0.99), sorted.last ?? .nan, sorted.count,
                expected, latencyCPU * 1000 / Double(rate * seconds)))
        lines.append("resident memory: \(Self.residentMegabytes()) MB")
        await Hub.stop(hubTasks)
        return Result(text: lines.joined(separator: "\n"), wakeP50: percentile(0.5), wakeP99: percentile(0.99))
    }

    /// Warnings and errors only: the benchmark registers thousands of endpoints.
    static let quietLogger: Logger = {
        var logger = Logger(label: "hub.bench")
        logger.logLevel = .warning
        return logger
    }()

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
