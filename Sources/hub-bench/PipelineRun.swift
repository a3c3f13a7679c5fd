import AsyncHTTPClient
import Foundation
import HubCore
import HubEmulators
import NIOCore
import NIOPosix
import Synchronization

/// One configuration of `hub-bench pipeline`: emulator, store, `hub serve` instances, then the
/// transport-alone, throughput and latency phases. Prints each figure as soon as it is known.
struct PipelineRun {
    let setup: PipelineSetup
    let options: PipelineOptions

    func run() async throws -> PipelineFigures {
        var figures = PipelineFigures(setup: setup)
        let workspace = try PipelineWorkspace.make()
        defer { workspace.remove() }
        let tracker = ArrivalTracker(users: setup.users, endpointsPerUser: setup.endpointsPerUser)
        let apns = try await BenchAPNSEmulator.start(workspace: workspace, tracker: tracker)
        var database: ThrowawayDatabase?
        var probe: ServerProbe?
        var hubs: [ServeProcess] = []
        let outcome: Result<Void, any Error>
        do {
            emit("\nhub-bench pipeline — \(setup.label)")
            emit(
                "  \(setup.users) users × \(setup.endpointsPerUser) APNs endpoint\(setup.endpointsPerUser == 1 ? "" : "s"); "
                    + "load: \(options.connections) HTTP/1.1 connections for \(options.seconds) s"
                    + (options.publishRate.map { " at \($0) publishes/s" } ?? " as fast as answered") + ", then "
                    + "\(setup.rate) publishes/s for \(options.latencySeconds) s")
            let populating = ContinuousClock.now
            if setup.store == "postgres" {
                guard let url = options.url else { throw ValidationErrorText("no PostgreSQL URL") }
                let created = try await ThrowawayDatabase.create(on: url)
                database = created
                try await PipelineWorkspace.populatePostgres(
                    url: created.url, users: setup.users, endpointsPerUser: setup.endpointsPerUser)
                probe = try await ServerProbe.open(created)
            } else {
                try await workspace.populateSQLite(users: setup.users, endpointsPerUser: setup.endpointsPerUser)
            }
            try workspace.writeConfig(postgresPoolSize: setup.store == "postgres" ? options.poolSize : nil)
            emit(
                String(
                    format: "  setup: %d endpoints stored through the store API in %.1f s%@",
                    setup.users * setup.endpointsPerUser, (ContinuousClock.now - populating).seconds,
                    database.map { " (database \($0.name), dropped afterwards)" } ?? ""))

            let transport = await TransportAlone.measure(
                emulator: apns.emulator, key: workspace.key, seconds: options.transportSeconds,
                concurrency: options.transportConcurrency)
            figures.transportRate = transport.rate
            emit(
                String(
                    format: "transport alone: %.0f notifications/s (%d in %.1f s, %d in flight, hub's APNs settings); "
                        + "%.3f CPU-s per 1,000 with the emulator in the same process",
                    transport.rate, transport.accepted, transport.seconds, options.transportConcurrency,
                    transport.cpuPerThousand))
            report(refusalsOf: tracker, phase: "transport alone")
            tracker.reset()

            var environment = [
                "HUB_TRANSPORTS_APNS_SERVER": "127.0.0.1:\(apns.port)", "HUB_TRANSPORTS_APNS_TRUST_ROOTS": apns.caPath,
            ]
            if let database { environment["HUB_BENCH_DATABASE_URL"] = database.url.reveal() }
            for _ in 0..<setup.instances {
                hubs.append(
                    try await ServeProcess(
                        config: workspace.configPath, directory: workspace.directory, environment: environment))
            }
            emit(
                "  hub serve: "
                    + hubs.enumerated().map {
                        "instance \(PipelineSetup.instanceName($0.offset)) pid \($0.element.pid) on 127.0.0.1:\($0.element.port)"
                    }.joined(separator: ", ")
                    + "; APNs at the emulator on 127.0.0.1:\(apns.port)")
            let admin = AdminClient(port: hubs[0].port, app: PipelineWorkspace.app, token: workspace.adminToken)
            let phases = PipelinePhases(
                setup: setup, options: options, hubs: hubs, tracker: tracker, admin: admin, server: probe,
                targets: hubs.map {
                    PublishTarget(port: $0.port, app: PipelineWorkspace.app, publisherKey: workspace.publisherKey)
                })
            try await phases.warmUp()
            try await phases.httpCeiling(into: &figures)
            try await phases.throughput(into: &figures)
            report(refusalsOf: tracker, phase: "throughput")
            tracker.reset()
            try await phases.latency(into: &figures)
            report(refusalsOf: tracker, phase: "latency")
            if setup.store == "postgres" && setup.instances == 2 { try await phases.crossInstanceWake(into: &figures) }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        for (index, hub) in hubs.enumerated() {
            if !(await hub.stop()) {
                emit(
                    "hub serve instance \(PipelineSetup.instanceName(index)) did not exit cleanly on SIGTERM; "
                        + "its log:\n\(hub.log)")
            }
        }
        await probe?.close()
        await apns.shutdown()
        await database?.drop()
        if case .failure = outcome, !hubs.isEmpty {
            emit("the hub's log (instance A):\n\(hubs[0].log)")
        }
        try outcome.get()
        return figures
    }

    private func report(refusalsOf tracker: ArrivalTracker, phase: String) {
        let refused = tracker.snapshot.refused
        if !refused.isEmpty { emit("  \(phase): pushes refused by the emulator: \(refused)") }
    }
}

/// Writes a line to standard output at once (unbuffered, also through a pipe).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The admin route that says how many deliveries the outbox still holds.
struct AdminClient: Sendable {
    let port: Int
    let app: String
    let token: String

    /// Pending deliveries, or `nil` when the hub did not answer.
    func pending() async -> Int? {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/apps/\(app)/statistics")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)),
            response.status == .ok,
            let body = try? await response.body.collect(upTo: 1 << 20),
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else { return nil }
        return object["pending"] as? Int
    }

    /// The sum of the samples of the metric `name` in the hub's `/metrics`, or `nil` when the hub
    /// did not answer or has no such metric.
    func metric(_ name: String) async -> Double? {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)),
            response.status == .ok,
            let body = try? await response.body.collect(upTo: 16 << 20)
        else { return nil }
        let samples = String(buffer: body).split(separator: "\n").filter {
            $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{")
        }
        guard !samples.isEmpty else { return nil }
        return samples.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }
}
