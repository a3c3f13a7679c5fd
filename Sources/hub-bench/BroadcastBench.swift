import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubCore
import HubEmulators
import HubSQLite
import NIOCore
import NIOPosix
import Synchronization

/// `hub-bench broadcast`: a broadcast to every user of an app through `hub serve` (a child
/// process on a SQLite file) and the APNs transport to an emulator in this process, next to the
/// transport alone and the HTTP ceiling, in one run.
struct BroadcastBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract:
            "A broadcast to --users users through hub serve: 202 latency, deliveries/s ÷ transport alone, RSS, p99.",
        discussion: """
            Seeds --users users with one APNs endpoint each straight through the SQLite store (transactions \
            of 20,000), measures the APNs transport alone against an emulator in this process and the HTTP \
            ceiling (GET /healthz) of a `hub serve` child, single publishes to a probe user alone (HTTP \
            answer and publish → provider), then POSTs an all-users broadcast and prints how long its 202 \
            took, its users published/s and deliveries/s (÷ the transport alone), the hub's RSS growth \
            and CPU, the bench process's CPU (emulator and client: on a 2-core machine they share the \
            cores), and single publishes while it runs. --kill-halfway kills hub serve with SIGKILL once \
            half the audience is published, starts it again (same instance ID) and checks that every user \
            got a tap; it prints the users tapped twice (at most a chunk's, plus the sends in flight at \
            the kill). Build with -c release; figures on a shared machine are only comparable within a run.
            """)

    @Option(help: "Users in the audience, one APNs endpoint each.") var users = 100_000
    @Option(help: "Users per chunk (hub.yaml broadcasts.chunkSize).") var chunk = 500
    @Option(help: "Users per write of a chunk (hub.yaml broadcasts.usersPerWrite).")
    var usersPerWrite = BroadcastConfiguration().usersPerWrite
    @Option(help: "Single publishes per second to the probe user, alone and during the broadcast.")
    var probeRate = 100
    @Option(help: "Seconds of single publishes alone.") var probeSeconds = 5
    @Option(help: "HTTP/1.1 connections of the HTTP ceiling.") var connections = 64
    @Option(help: "Seconds of the transport-alone phase.") var transportSeconds = 5.0
    @Option(help: "Sends in flight in the transport-alone phase.") var transportConcurrency = 400
    @Flag(help: "SIGKILL hub serve when half the audience is published, restart it, check every user got it.")
    var killHalfway = false

    func validate() throws {
        guard users >= 1, (1...1000).contains(chunk), (1...1000).contains(usersPerWrite), probeRate >= 1,
            probeSeconds >= 1, connections >= 1
        else {
            throw ValidationError(
                "--users, --probe-rate, --probe-seconds, --connections ≥ 1; --chunk, --users-per-write 1 to 1000")
        }
    }

    func run() async throws {
        let workspace = try PipelineWorkspace.make()
        defer { workspace.remove() }
        // The probe user is the last of the tracker's users; its ID sorts after every "u…" user, so
        // the broadcast reaches it last.
        let tracker = ArrivalTracker(users: users + 1, endpointsPerUser: 1)
        let apns = try await BenchAPNSEmulator.start(workspace: workspace, tracker: tracker)
        var hub: ServeProcess?
        let outcome: Result<Void, any Error>
        do {
            emit(
                "hub-bench broadcast — \(users) users × 1 APNs endpoint, chunks of \(chunk) written \(usersPerWrite) users at a time, SQLite (WAL, synchronous=FULL)"
            )
            emit("  figures of one run: on a shared machine compare the ratios, not the rates")
            let seeding = ContinuousClock.now
            try await seed(workspace)
            emit(
                String(
                    format: "  seeded %d endpoints through the store in %.1f s", users + 1,
                    (ContinuousClock.now - seeding).seconds))
            try workspace.writeConfig(
                postgresPoolSize: nil,
                extra: "broadcasts: { chunkSize: \(chunk), usersPerWrite: \(usersPerWrite) }\n",
                instanceID: "bench-broadcast")

            let transport = await TransportAlone.measure(
                emulator: apns.emulator, key: workspace.key, seconds: transportSeconds,
                concurrency: transportConcurrency)
            emit(
                String(
                    format: "transport alone: %.0f notifications/s (%d in %.1f s, %d in flight)", transport.rate,
                    transport.accepted, transport.seconds, transportConcurrency))
            tracker.reset()

            let environment = [
                "HUB_TRANSPORTS_APNS_SERVER": "127.0.0.1:\(apns.port)", "HUB_TRANSPORTS_APNS_TRUST_ROOTS": apns.caPath,
            ]
            func serve() async throws -> ServeProcess {
                try await ServeProcess(
                    config: workspace.configPath, directory: workspace.directory, environment: environment)
            }
            var current = try await serve()
            hub = current
            emit("  hub serve pid \(current.pid) on 127.0.0.1:\(current.port); APNs at the emulator")
            let ceiling = try await httpCeiling(port: current.port, workspace: workspace)
            emit(String(format: "HTTP ceiling: %.0f GET /healthz/s over %d connections", ceiling, connections))

            let probe = Probe(
                port: current.port, workspace: workspace, user: users, userID: Self.probeUser, tracker: tracker)
            let alone = try await probe.run(rate: probeRate, until: .seconds(probeSeconds), stop: nil)
            emit("single publishes alone: \(alone.line)")
            tracker.reset()

            let rssBefore = Self.residentMegabytes(pid: current.pid)
            let cpuBefore = current.cpuSeconds()
            let benchUsage = ProcessUsage()
            let started = ContinuousClock.now
            let created = try await createBroadcast(port: current.port, workspace: workspace)
            let accepted = ContinuousClock.now - started
            emit(
                String(
                    format: "broadcast %@: 202 in %.1f ms (target ≤ 100 ms)", created, accepted.seconds * 1000))

            let stop = StopFlag()
            let during = Task { try await probe.run(rate: probeRate, until: .seconds(3600), stop: stop) }
            var peak = rssBefore
            var killed: (at: Int, pid: Int32, restarted: Duration)?
            var published = 0
            var cpuOfKilled = 0.0
            while true {
                peak = max(peak, Self.residentMegabytes(pid: current.pid))
                let progress = await Self.progress(port: current.port, id: created, workspace: workspace)
                published = progress?.published ?? published
                if progress?.status == "done" { break }
                if killHalfway && killed == nil && published >= users / 2 {
                    cpuOfKilled = current.cpuSeconds() - cpuBefore
                    let pid = current.pid
                    kill(pid, SIGKILL)
                    current.process.waitUntilExit()
                    let restarting = ContinuousClock.now
                    current = try await serve()
                    hub = current
                    probe.port = current.port
                    killed = (published, pid, ContinuousClock.now - restarting)
                    emit(
                        String(
                            format:
                                "  killed hub serve (pid %d, SIGKILL) at %d published; restarted as pid %d in %.1f s",
                            pid, published, current.pid, (ContinuousClock.now - restarting).seconds))
                }
                try await Task.sleep(for: .milliseconds(100))
                // Stop probing before the last chunk: it taps the probe user too.
                if published >= users - chunk { stop.stop() }
            }
            let expanded = ContinuousClock.now - started
            stop.stop()
            let probes = try await during.value
            let deliveredAll = await waitForEveryUser(tracker)
            let delivered = ContinuousClock.now - started
            let cpu = cpuOfKilled + current.cpuSeconds() - (killed == nil ? cpuBefore : 0)
            let benchCPU = benchUsage.elapsedSelf
            let arrived = tracker.snapshot
            let audience = arrived.tapsPerEndpoint.prefix(users)
            let tapped = audience.filter { $0 > 0 }.count
            let twice = audience.filter { $0 > 1 }.count
            let deliveries = audience.reduce(0) { $0 + Int($1) }
            let rate = Double(deliveries) / delivered.seconds
            emit(
                String(
                    format: "published %d users (the audience and the probe user) in %.1f s: %.0f users/s", published,
                    expanded.seconds, Double(published) / expanded.seconds))
            emit(
                String(
                    format: "deliveries: %d taps to %d of %d users in %.1f s: %.0f/s = %.2f × the transport alone "
                        + "(target ≥ 0.8)%@",
                    deliveries, tapped, users, delivered.seconds, rate, rate / transport.rate,
                    deliveredAll ? "" : " (gave up waiting: taps stopped arriving)"))
            emit(
                String(
                    format: "hub RSS: %.1f MB before, %.1f MB at the peak: +%.1f MB (target ≤ 100 MB)%@", rssBefore,
                    peak, peak - rssBefore, killed == nil ? "" : " (the restarted process's)"))
            emit(
                String(
                    format: "CPU during the broadcast: hub %.1f CPU-s (%.2f cores, %.3f CPU-s per 1,000 deliveries); "
                        + "bench process (emulator, probes) %.1f CPU-s (%.2f cores), of %d cores",
                    cpu, cpu / delivered.seconds, deliveries > 0 ? cpu * 1000 / Double(deliveries) : .nan, benchCPU,
                    benchCPU / delivered.seconds, System.coreCount))
            emit(
                String(
                    format: "single publishes during it: %@; p99 %.1f × alone (target ≤ 2 ×)", probes.line,
                    alone.answerP99 > 0 ? probes.answerP99 / alone.answerP99 : .nan))
            if let killed {
                emit(
                    "kill -9 halfway (at \(killed.at) published): \(tapped) of \(users) users tapped, "
                        + "\(twice) tapped twice (chunk \(chunk); the killed chunk's users and the taps in flight at "
                        + "the kill are sent again), \(users - tapped) missed")
            }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        if let hub, !(await hub.stop()) { emit("hub serve did not exit cleanly on SIGTERM; its log:\n\(hub.log)") }
        await apns.shutdown()
        if case .failure = outcome, let hub { emit("the hub's log:\n\(hub.log)") }
        try outcome.get()
    }

    static let probeUser = "~probe"

    /// `users` endpoints (`u0`, `u1`, …) and the probe user's, straight through the store in
    /// transactions of 20,000.
    private func seed(_ workspace: PipelineWorkspace) async throws {
        let store = try SQLiteStore(path: workspace.sqlitePath)
        try await store.migrate()
        let now = Date()
        func endpoint(_ index: Int, user: String) -> Endpoint {
            Endpoint(
                id: "e0", appId: PipelineWorkspace.app, userId: user, platform: .ios, platformAppId: APNSBench.bundleID,
                transport: .apns, token: PipelineToken.make(user: index, endpoint: 0),
                attributes: ["environment": "production"], registeredAt: now)
        }
        var start = 0
        while start < users {
            let end = min(users, start + 20_000)
            _ = try await store.upsertEndpoints((start..<end).map { endpoint($0, user: "u\($0)") }, limit: .unlimited)
            start = end
        }
        _ = try await store.upsertEndpoints([endpoint(users, user: Self.probeUser)], limit: .unlimited)
    }

    private func httpCeiling(port: Int, workspace: PipelineWorkspace) async throws -> Double {
        let tally = PublishTally(users: 1)
        let sequence = PublishSequence(users: 1)
        let target = PublishTarget(port: port, app: PipelineWorkspace.app, publisherKey: workspace.publisherKey)
        let load = try await PublishLoad.connect(
            connections, to: [target.healthProbe], group: MultiThreadedEventLoopGroup.singleton, tally: tally,
            next: { sequence.next() })
        let seconds = 3
        let end = Monotonic.now() + UInt64(seconds) * 1_000_000_000
        tally.closeWindow(at: end)
        sequence.start(until: end)
        load.start()
        await load.waitUntilFinished()
        await load.close()
        return Double(tally.snapshot.acceptedInWindow) / Double(seconds)
    }

    /// POSTs the all-users broadcast; returns its ID once the 202 came.
    private func createBroadcast(port: Int, workspace: PipelineWorkspace) async throws -> String {
        let url = "http://127.0.0.1:\(port)/v1/apps/\(PipelineWorkspace.app)/broadcasts"
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(workspace.publisherKey)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(
            ByteBuffer(
                string:
                    #"{"audience":{"allUsers":true},"appNotificationId":"bench-broadcast","payload":{"rawContent":"outage"}}"#
            ))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .accepted,
            let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let id = object["id"] as? String
        else {
            throw ValidationErrorText("the broadcast was answered \(response.status): \(String(buffer: body))")
        }
        return id
    }

    /// The broadcast's `status` and `published`, or nil when the hub did not answer.
    static func progress(
        port: Int, id: String, workspace: PipelineWorkspace
    ) async -> (status: String, published: Int)? {
        let url = "http://127.0.0.1:\(port)/v1/apps/\(PipelineWorkspace.app)/broadcasts/\(id)"
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(workspace.publisherKey)")
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)),
            response.status == .ok, let body = try? await response.body.collect(upTo: 1 << 20),
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let status = object["status"] as? String, let published = object["published"] as? Int
        else { return nil }
        return (status, published)
    }

    /// Waits until every user of the audience got a tap, or taps stopped arriving for 15 s.
    private func waitForEveryUser(_ tracker: ArrivalTracker) async -> Bool {
        var last = -1
        var lastChange = ContinuousClock.now
        while true {
            let delivered = tracker.delivered
            if delivered != last {
                last = delivered
                lastChange = .now
                if tracker.snapshot.tapsPerEndpoint.prefix(users).allSatisfy({ $0 > 0 }) { return true }
            }
            if ContinuousClock.now - lastChange > .seconds(15) { return false }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// VmRSS of process `pid`, in MB.
    static func residentMegabytes(pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
        return (kilobytes.flatMap { Double($0) } ?? 0) / 1024
    }
}

/// Single publishes to one user, one at a time at a rate: the HTTP answer (durable) and publish →
/// provider (the tap at the emulator) of each.
final class Probe: @unchecked Sendable {
    var port: Int
    let workspace: PipelineWorkspace
    let user: Int
    let userID: String
    let tracker: ArrivalTracker

    init(port: Int, workspace: PipelineWorkspace, user: Int, userID: String, tracker: ArrivalTracker) {
        self.port = port
        self.workspace = workspace
        self.user = user
        self.userID = userID
        self.tracker = tracker
    }

    struct Figures {
        var count: Int
        var answerP50: Double
        var answerP99: Double
        var providerP99: Double
        var line: String {
            String(
                format: "%d, answered p50 %.2f ms, p99 %.2f ms; publish → provider p99 %.2f ms", count, answerP50,
                answerP99, providerP99)
        }
    }

    func run(rate: Int, until limit: Duration, stop: StopFlag?) async throws -> Figures {
        let interval = Duration.microseconds(1_000_000 / Int64(max(1, rate)))
        let end = ContinuousClock.now + limit
        var answers: [Double] = []
        var index = 0
        let before = tracker.snapshot.latencies.count
        while ContinuousClock.now < end && !(stop?.isStopped ?? false) {
            let start = ContinuousClock.now
            tracker.markSent(user: user, at: Monotonic.now())
            var request = HTTPClientRequest(
                url: "http://127.0.0.1:\(port)/v1/apps/\(PipelineWorkspace.app)/users/\(userID)/notifications")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(workspace.publisherKey)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(
                ByteBuffer(string: #"{"appNotificationId":"probe-\#(index)","payload":{"rawContent":"x"}}"#))
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(30)) {
                _ = try? await response.body.collect(upTo: 1 << 20)
                if response.status == .created || response.status == .ok {
                    answers.append((ContinuousClock.now - start).seconds * 1000)
                }
            }
            index += 1
            let took = ContinuousClock.now - start
            if took < interval { try await Task.sleep(for: interval - took) }
        }
        try? await Task.sleep(for: .milliseconds(200))  // the last taps
        let provider = Array(tracker.snapshot.latencies.dropFirst(before)).sorted()
        let sorted = answers.sorted()
        func at(_ values: [Double], _ quantile: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count) * quantile))]
        }
        return Figures(
            count: sorted.count, answerP50: at(sorted, 0.5), answerP99: at(sorted, 0.99),
            providerP99: at(provider, 0.99))
    }
}

/// Tells a probe loop to stop.
final class StopFlag: Sendable {
    private let stopped = Atomic<Bool>(false)
    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }
}
