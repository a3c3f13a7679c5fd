import ArgumentParser
import Foundation
import HubCore

/// `hub-bench pipeline`: the whole delivery path, HTTP publish → store → dispatcher → APNs
/// transport → emulator, next to the transport alone, in one run.
struct PipelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Whole-path delivery: HTTP publish → store → APNs transport → emulator, next to the transport alone.",
        discussion: """
            Runs `hub serve` (one or two instances of the `hub` beside this executable) as child \
            processes on a generated hub.yaml whose app has a generated APNs key; HUB_TRANSPORTS_APNS_SERVER and HUB_TRANSPORTS_APNS_TRUST_ROOTS point \
            them at an APNs emulator in this process. Users and their APNs endpoints are stored through \
            the store's API first; each token names its user, so the emulator tells whose taps arrive. \
            Then, per configuration: the APNs transport alone against the emulator (hub serve's transport \
            settings, no HTTP, store or dispatcher); HTTP/1.1 publishes for --seconds (closed loop, or \
            offered at --publish-rate; with --batch N, batches of N users a request through the batch route), \
            spread over the users and the instances (accepted notifications/s, pushes at the emulator during the \
            load and after it, hub CPU from /proc/PID/stat per 1,000 deliveries, pipeline ÷ transport); \
            then --rate publishes/s to instance A only, each to a user of its own, for publish → provider \
            p50/p99 and CPU per 1,000 publishes. The load comes from a built-in NIO client (no wrk \
            needed). Figures are printed with the targets of issue 13 next to them.

            --all runs SQLite with 1 and with 100 endpoints per user, then PostgreSQL with one and two \
            instances (1 endpoint per user); PostgreSQL needs HUB_DATABASE_URL (or HUB_TEST_DATABASE_URL, \
            or --database-url) of a user that may create databases: each run creates a database of its \
            own and drops it (scripts/with-postgres provides one). Run a release build on an idle machine: \
            swift build -c release && scripts/with-postgres .build/release/hub-bench pipeline --all
            """)

    @Option(help: "The store: sqlite or postgres.") var store = "sqlite"
    @Option(help: "hub serve instances (1 or 2; 2 needs --store postgres).") var instances = 1
    @Option(help: "APNs endpoints per user (the issue's cases: 1 and 100).") var endpointsPerUser = 1
    @Option(help: "Users (default ÷ endpoints per user: 100,000 on SQLite, 30,000 on PostgreSQL).")
    var users: Int?
    @Option(help: "Seconds of the throughput phase.") var seconds = 30
    @Option(
        help: "Users per request in the throughput phase: batches through POST …/notifications/batch (1 to 1000).")
    var batch: Int?
    @Option(help: "Offer publishes at this rate in the throughput phase instead of as fast as they are answered.")
    var publishRate: Int?
    @Option(help: "Publishes/s of the latency phase (default 1,000; 100 with 100 endpoints per user).")
    var rate: Int?
    @Option(help: "Seconds of the latency phase.") var latencySeconds = 5
    @Option(help: "HTTP/1.1 connections of the load (one publish in flight each).") var connections = 128
    @Option(help: "Seconds of the transport-alone phase.") var transportSeconds = 5.0
    @Option(help: "Sends in flight in the transport-alone phase.") var transportConcurrency = 400
    @Option(help: "PostgreSQL URL; default $HUB_DATABASE_URL, then $HUB_TEST_DATABASE_URL (a URL here shows in ps).")
    var databaseURL: String?
    @Option(help: "store.postgres.poolSize of each instance.") var poolSize = 16
    @Flag(
        name: [.customLong("all"), .customLong("compare")],
        help: "Run the matrix: sqlite with 1 and 100 endpoints per user, postgres with 1 and 2 instances.")
    var all = false

    func validate() throws {
        guard ["sqlite", "postgres"].contains(store) else { throw ValidationError("--store is sqlite or postgres") }
        guard (1...2).contains(instances) else { throw ValidationError("--instances is 1 or 2") }
        guard store == "postgres" || instances == 1 || all else {
            throw ValidationError("several instances need --store postgres (SQLite is one process's store)")
        }
        guard endpointsPerUser >= 1, users.map({ $0 >= 1 }) ?? true, rate.map({ $0 >= 1 }) ?? true,
            publishRate.map({ $0 >= 1 }) ?? true
        else {
            throw ValidationError("--endpoints-per-user, --users, --rate and --publish-rate are at least 1")
        }
        guard batch.map({ (1...1000).contains($0) }) ?? true else { throw ValidationError("--batch is 1 to 1000") }
        guard batch == nil || publishRate == nil else {
            throw ValidationError("--batch sends as fast as answered; leave out --publish-rate")
        }
        guard seconds >= 1, latencySeconds >= 1, connections >= 1, transportSeconds > 0, transportConcurrency >= 1
        else { throw ValidationError("durations, --connections and --transport-concurrency must be positive") }
        if store == "postgres" && !all && url == nil {
            throw ValidationError("give the PostgreSQL URL in HUB_DATABASE_URL or --database-url")
        }
    }

    private var url: Secret? { BenchCommand.databaseURL(option: databaseURL) }

    func run() async throws {
        let options = PipelineOptions(
            seconds: seconds, publishRate: publishRate, latencySeconds: latencySeconds, connections: connections,
            transportSeconds: transportSeconds, transportConcurrency: transportConcurrency, poolSize: poolSize,
            url: url,
            batch: batch)
        let matrix: [(store: String, instances: Int, endpoints: Int)] =
            all
            ? [("sqlite", 1, 1), ("sqlite", 1, 100), ("postgres", 1, 1), ("postgres", 2, 1)]
            : [(store, instances, endpointsPerUser)]
        emit(
            "hub-bench pipeline — \(matrix.count) configuration\(matrix.count == 1 ? "" : "s"), "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores; targets are for a release build on 2 cores")
        var results: [PipelineFigures] = []
        for entry in matrix {
            let setup = PipelineSetup(
                store: entry.store, instances: entry.instances, endpointsPerUser: entry.endpoints,
                // 10 s of the target rate: a user is published to again after ~10 s at most.
                users: users ?? max(1, (entry.store == "postgres" ? 30_000 : 100_000) / entry.endpoints),
                rate: rate ?? max(1, min(1000, 10_000 / entry.endpoints)))
            if setup.store == "postgres" && options.url == nil {
                emit("\nhub-bench pipeline — \(setup.label): skipped, no PostgreSQL URL (set HUB_DATABASE_URL)")
                continue
            }
            results.append(try await PipelineRun(setup: setup, options: options).run())
        }
        if results.count > 1 { PipelineFigures.printSummary(results) }
    }
}

/// Settings shared by every configuration of one run.
struct PipelineOptions: Sendable {
    var seconds: Int
    /// Publishes/s offered in the throughput phase; `nil`: closed loop, as fast as answered.
    var publishRate: Int?
    var latencySeconds: Int
    var connections: Int
    var transportSeconds: Double
    var transportConcurrency: Int
    var poolSize: Int
    var url: Secret?
    /// Users per request of the throughput phase (the batch route); `nil`: one publish a request.
    var batch: Int?
}

/// One configuration: store, instances, endpoints per user, users, latency-phase rate.
struct PipelineSetup: Sendable {
    var store: String
    var instances: Int
    var endpointsPerUser: Int
    var users: Int
    var rate: Int

    var label: String {
        let store = self.store == "sqlite" ? "SQLite (WAL, synchronous=FULL)" : "PostgreSQL"
        return "\(store), \(instances) instance\(instances == 1 ? "" : "s"), "
            + "\(endpointsPerUser) endpoint\(endpointsPerUser == 1 ? "" : "s") per user"
    }

    var targets: PipelineTargets { PipelineTargets(setup: self) }

    static func instanceName(_ index: Int) -> String {
        index < 26 ? String(Character(UnicodeScalar(UInt8(65 + index)))) : "\(index + 1)"
    }
}
