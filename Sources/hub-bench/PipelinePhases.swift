import Foundation
import HubCore
import NIOPosix

/// The measured phases of one `hub-bench pipeline` configuration, against running hubs.
struct PipelinePhases {
    let setup: PipelineSetup
    let options: PipelineOptions
    let hubs: [ServeProcess]
    let tracker: ArrivalTracker
    let admin: AdminClient
    /// The PostgreSQL server's counters (PostgreSQL only): its cost per delivery.
    let server: ServerProbe?
    /// One per hub instance, in the order of ``hubs``.
    let targets: [PublishTarget]

    /// A few publishes through every instance, delivered before anything is measured, so that the
    /// hubs' APNs connections are open (as in a hub that has been running). Resets the tracker.
    func warmUp() async throws {
        let count = 20 * hubs.count
        let tally = PublishTally(users: setup.users)
        let load = try await PublishLoad.connect(
            hubs.count, to: targets, group: MultiThreadedEventLoopGroup.singleton, tally: tally, next: nil)
        for index in 0..<count { load.submit(user: index % setup.users, on: index) }
        try await waitForAnswers(tally, count: count)
        await load.close()
        let drain = await drain(expecting: tally.snapshot.accepted * setup.endpointsPerUser)
        emit(
            String(
                format: "  warm-up: %d publishes, %d pushes%@", tally.snapshot.accepted, tracker.delivered,
                drain.complete ? "" : " (the outbox stopped draining)"))
        tracker.reset()
    }

    /// The HTTP ceiling of this run: the same client and connections asking `GET /healthz` (no
    /// body, no store, no dispatcher) as fast as answered, for up to 5 s. Publishes/s are printed
    /// as a share of it, which compares runs on hosts of different speed.
    func httpCeiling(into figures: inout PipelineFigures) async throws {
        let seconds = min(5, options.seconds)
        let tally = PublishTally(users: 1)
        let sequence = PublishSequence(users: 1)
        let load = try await PublishLoad.connect(
            options.connections, to: targets.map(\.healthProbe), group: MultiThreadedEventLoopGroup.singleton,
            tally: tally,
            next: { sequence.next() })
        let end = Monotonic.now() + UInt64(seconds) * 1_000_000_000
        tally.closeWindow(at: end)
        sequence.start(until: end)
        load.start()
        await load.waitUntilFinished()
        await load.close()
        let answered = tally.snapshot
        figures.httpCeiling = Double(answered.acceptedInWindow) / Double(seconds)
        let refused = answered.refused.isEmpty ? "" : ", refused \(answered.refused)"
        emit(
            String(
                format:
                    "HTTP ceiling: %.0f requests/s (GET /healthz over the same %d connections and client for %d s%@; "
                    + "no store or dispatcher)",
                figures.httpCeiling, options.connections, seconds, refused))
    }

    /// Publishes over every instance for `--seconds` (closed loop, or offered at `--publish-rate`);
    /// what arrived at the emulator during the load and after it.
    func throughput(into figures: inout PipelineFigures) async throws {
        let endpoints = setup.endpointsPerUser
        let tally = PublishTally(users: setup.users)
        let sequence = PublishSequence(users: setup.users)
        let paced = options.publishRate
        var next: (@Sendable () -> Int?)?
        let batch = options.batch
        if paced == nil { next = { sequence.next(count: batch ?? 1) } }
        let load = try await PublishLoad.connect(
            options.connections, to: targets.map { $0.batches(of: batch, users: setup.users) },
            group: MultiThreadedEventLoopGroup.singleton, tally: tally, next: next)
        defer { Task { await load.close() } }
        let serverStart = try await server?.snapshot()
        let roundTripsStart = server == nil ? nil : await roundTrips()
        let cpuStart = hubs.cpuSeconds()
        let benchUsage = ProcessUsage()
        let start = Monotonic.now()
        let end = start + UInt64(options.seconds) * 1_000_000_000
        tally.closeWindow(at: end)
        var submitted = 0
        if let paced {
            submitted = try await pace(load, rate: paced, count: .max, until: end, marking: false).submitted
        } else {
            sequence.start(until: end)
            load.start()
        }
        try await Task.sleep(for: .nanoseconds(Int64(end - min(end, Monotonic.now()))))
        let deliveredInWindow = tracker.delivered
        let cpuInWindow = hubs.cpuSeconds() - cpuStart
        let benchCPU = benchUsage.elapsedSelf
        if paced == nil {
            await load.waitUntilFinished()
        } else {
            try await waitForAnswers(tally, count: submitted)
        }
        await load.close()
        let answered = tally.snapshot
        let drain = await drain(expecting: answered.accepted * endpoints)
        let cpu = hubs.cpuSeconds() - cpuStart
        let arrived = tracker.snapshot

        let window = Double(options.seconds)
        figures.acceptedPerSecond = Double(answered.acceptedInWindow) / window
        figures.deliveriesPerSecond = Double(deliveredInWindow) / window
        figures.deliveredInWindowShare = share(deliveredInWindow, of: answered.acceptedInWindow * endpoints)
        figures.deliveredShare = share(arrived.delivered, of: answered.accepted * endpoints)
        figures.cpuPerThousandDeliveries = arrived.delivered > 0 ? cpu * 1000 / Double(arrived.delivered) : .nan
        figures.ratio = figures.transportRate > 0 ? figures.deliveriesPerSecond / figures.transportRate : .nan
        var publishedUsers = 0
        var servedUsers = 0
        var repeatedUsers = 0
        var mergedWithinUser = 0
        for user in 0..<setup.users where answered.publishesPerUser[user] > 0 {
            let publishes = Int(answered.publishesPerUser[user])
            publishedUsers += 1
            if publishes > 1 { repeatedUsers += 1 }
            let taps = arrived.tapsPerEndpoint[(user * endpoints)..<((user + 1) * endpoints)]
            if taps.allSatisfy({ $0 > 0 }) { servedUsers += 1 }
            mergedWithinUser += taps.reduce(0) { $0 + max(0, publishes - Int($1)) }
        }
        figures.usersPublished = publishedUsers
        figures.usersServed = servedUsers

        let refused = answered.refused.isEmpty ? "" : ", refused \(answered.refused)"
        let failures = answered.failures == 0 ? "" : ", \(answered.failures) connections failed"
        let offered = paced.map { ", offered at \($0)/s" } ?? ""
        emit(
            String(
                format: "throughput: %.0f accepted %@/s (%d durable 2xx in %d s over HTTP%@%@%@%@)%@",
                figures.acceptedPerSecond, batch == nil ? "publishes" : "notifications", answered.acceptedInWindow,
                options.seconds,
                batch.map { ", batches of \($0) users a request" } ?? ", one publish a request", offered, refused,
                failures,
                setup.targets.acceptedPerSecond(figures.acceptedPerSecond)))
        // The throughput target is for SQLite with one endpoint per user; when it was set, this machine
        // answered ~52,000 GET /healthz/s.
        let reference =
            setup.store == "sqlite" && endpoints == 1
            ? String(
                format: "; the issue's 10,000/s target was %.2f of the ~52,000/s /healthz it measured",
                10_000.0 / 52_000)
            : ""
        emit(
            String(
                format: "publishes ÷ HTTP ceiling: %.2f (%.0f accepted publishes/s ÷ %.0f GET /healthz/s%@)",
                figures.acceptedPerSecond / figures.httpCeiling, figures.acceptedPerSecond, figures.httpCeiling,
                reference))
        emit(
            String(
                format: "deliveries during the load: %.0f/s (%d pushes at the emulator = %.1f%% of the accepted "
                    + "publishes × endpoints)%@%@",
                figures.deliveriesPerSecond, deliveredInWindow, figures.deliveredInWindowShare * 100,
                setup.targets.deliveredInWindow(figures.deliveredInWindowShare),
                setup.targets.deliveriesPerSecond(figures.deliveriesPerSecond)))
        emit(
            String(
                format: "after the load: %d pushes = %.1f%% of %d accepted publishes × endpoints, drained in %.1f s%@; "
                    + "distinct users: %d of %d users published to got a tap on every endpoint%@",
                arrived.delivered, figures.deliveredShare * 100, answered.accepted, drain.seconds,
                drain.complete ? "" : " (gave up: the outbox stopped draining)", servedUsers, publishedUsers,
                setup.targets.distinctUsers(served: servedUsers, published: publishedUsers)))
        if repeatedUsers > 0 {
            emit(
                "  \(repeatedUsers) users got several publishes (users cycle every \(setup.users) publishes); "
                    + "their taps may coalesce while one is pending: \(mergedWithinUser) fewer pushes than publishes")
        }
        emit(
            String(
                format: "hub CPU: %.3f CPU-s per 1,000 deliveries, %.3f per 1,000 notifications accepted "
                    + "(%.1f CPU-s for the load and the drain, %.1f during the load, %d instance%@); the bench process "
                    + "(load and emulator) used %.1f CPU-s during the load",
                figures.cpuPerThousandDeliveries, answered.accepted > 0 ? cpu * 1000 / Double(answered.accepted) : .nan,
                cpu, cpuInWindow, hubs.count, hubs.count == 1 ? "" : "s", benchCPU))
        emit(
            String(
                format: "pipeline ÷ transport: %.2f (%.0f deliveries/s during the load ÷ %.0f notifications/s)%@",
                figures.ratio, figures.deliveriesPerSecond, figures.transportRate, setup.targets.ratio(figures.ratio)))
        if let server, let serverStart {
            try await serverCost(
                server, since: serverStart, roundTripsSince: roundTripsStart, deliveries: arrived.delivered,
                publishes: answered.accepted, into: &figures)
        }
    }

    /// The hubs' `hub_postgres_round_trips_total` summed, or nil when a hub does not tell.
    private func roundTrips() async -> Double? {
        var sum = 0.0
        for hub in hubs {
            let client = AdminClient(port: hub.port, app: admin.app, token: admin.token)
            guard let value = await client.metric("hub_postgres_round_trips_total") else { return nil }
            sum += value
        }
        return sum
    }

    /// What the PostgreSQL server did for the throughput phase (load and drain), per 1,000
    /// deliveries (``ServerProbe``). Waits ``ServerProbe/statisticsDelay`` first, so that the
    /// server's counters include the phase.
    private func serverCost(
        _ server: ServerProbe, since start: ServerSnapshot, roundTripsSince roundTripsStart: Double?,
        deliveries: Int, publishes: Int, into figures: inout PipelineFigures
    ) async throws {
        try await Task.sleep(for: ServerProbe.statisticsDelay)
        let end = try await server.snapshot()
        let roundTripsEnd = await roundTrips()
        let (kinds, kindsMissing) = await server.walByKind(from: start.lsn, to: end.lsn)
        var cost = ServerCost(
            from: start, to: end, deliveries: deliveries, walKinds: kinds, walKindsMissing: kindsMissing)
        if let roundTripsStart, let roundTripsEnd { cost.roundTrips = Int64(roundTripsEnd - roundTripsStart) }
        figures.serverCPUPerThousandDeliveries = cost.cpuPerThousand
        figures.roundTripsPerThousandDeliveries = cost.roundTrips.map { cost.perThousand($0) } ?? .nan
        figures.walBytesPerThousandDeliveries = cost.perThousand(cost.wal.bytes)
        emit(
            String(
                format: "PostgreSQL per 1,000 deliveries (%d deliveries of %d publishes: the throughput phase, its "
                    + "drain and %.0f s for the server's statistics to catch up; %d instance%@):",
                deliveries, publishes, ServerProbe.statisticsDelay.seconds, hubs.count, hubs.count == 1 ? "" : "s"))
        for line in cost.lines(
            statementsMissing: server.statementsMissing, cpuMissing: server.cpuMissing,
            hubCPU: figures.cpuPerThousandDeliveries)
        {
            emit(line)
        }
    }

    /// Publishes at `rate`/s to instance A only, each to a user of its own, and measures publish →
    /// provider (the emulator's arrival) for every push.
    func latency(into figures: inout PipelineFigures) async throws {
        try await httpFloor(into: &figures)
        let count = setup.rate * options.latencySeconds
        let tally = PublishTally(users: setup.users)
        let load = try await PublishLoad.connect(
            options.connections, to: [targets[0]], group: MultiThreadedEventLoopGroup.singleton, tally: tally,
            next: nil)
        defer { Task { await load.close() } }
        let cpuStart = hubs.cpuSeconds()
        let sending = try await pace(load, rate: setup.rate, count: count, until: .max, marking: true).seconds
        try await waitForAnswers(tally, count: count)
        let answered = tally.snapshot
        let drain = await drain(expecting: answered.accepted * setup.endpointsPerUser)
        let cpu = hubs.cpuSeconds() - cpuStart
        await load.close()
        let latencies = tracker.snapshot.latencies.sorted()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        figures.latencyP50 = percentile(0.5)
        figures.latencyP99 = percentile(0.99)
        figures.cpuPerThousandPublishes = answered.accepted > 0 ? cpu * 1000 / Double(answered.accepted) : .nan
        let across = hubs.count > 1 ? " on instance A, both instances dispatching" : ""
        let whose = count <= setup.users ? "to distinct users" : "over \(setup.users) users"
        let refused = answered.refused.isEmpty ? "" : ", refused \(answered.refused)"
        emit(
            String(
                format: "latency at %d publishes/s (%.0f/s achieved, %d publishes %@%@%@): "
                    + "publish → provider p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d of %d pushes%@)%@",
                setup.rate, Double(count) / sending, answered.accepted, whose, across, refused, figures.latencyP50,
                figures.latencyP99, latencies.last ?? .nan, latencies.count, answered.accepted * setup.endpointsPerUser,
                drain.complete ? "" : ", the outbox stopped draining", setup.targets.latencyP99(figures.latencyP99)))
        emit(
            String(
                format: "hub CPU at %d publishes/s: %.3f CPU-s per 1,000 publishes with their deliveries "
                    + "(%.1f × the HTTP floor)%@",
                setup.rate, figures.cpuPerThousandPublishes,
                figures.cpuPerThousandPublishes / figures.cpuPerThousandProbes,
                setup.targets.cpuPerThousandPublishes(figures.cpuPerThousandPublishes)))
    }

    /// The CPU floor of the latency phase: `GET /healthz` at the same rate to instance A, for up to
    /// 5 s; the hub's CPU per 1,000 such requests is what any request costs it at that rate (the
    /// wake-ups of an HTTP server that is mostly idle), before a publish does any work.
    private func httpFloor(into figures: inout PipelineFigures) async throws {
        let seconds = min(5, options.latencySeconds)
        let count = setup.rate * seconds
        let tally = PublishTally(users: setup.users)
        let load = try await PublishLoad.connect(
            options.connections, to: [targets[0].healthProbe], group: MultiThreadedEventLoopGroup.singleton,
            tally: tally, next: nil)
        let cpuStart = hubs.cpuSeconds()
        _ = try await pace(load, rate: setup.rate, count: count, until: .max, marking: false)
        try await waitForAnswers(tally, count: count)
        let cpu = hubs.cpuSeconds() - cpuStart
        await load.close()
        let answered = tally.snapshot.accepted
        figures.cpuPerThousandProbes = answered > 0 ? cpu * 1000 / Double(answered) : .nan
        emit(
            String(
                format:
                    "HTTP floor at %d requests/s: %.3f CPU-s per 1,000 GET /healthz (%d answered in %d s, instance A)",
                setup.rate, figures.cpuPerThousandProbes, answered, seconds))
    }

    /// Submits publishes at `rate`/s, user after user, round-robin over the connections, until
    /// `count` were submitted or `end` (``Monotonic`` ns) passed. `marking`: tell the tracker when
    /// each was due (the latency phase), not when it was sent, so a late sender cannot hide a slow hub.
    private func pace(
        _ load: PublishLoad, rate: Int, count: Int, until end: UInt64, marking: Bool
    ) async throws -> (submitted: Int, seconds: Double) {
        let interval = 1_000_000_000 / Double(rate)
        let startNanos = Monotonic.now()
        let start = ContinuousClock.now
        var index = 0
        while index < count {
            let offset = UInt64(Double(index) * interval)
            guard startNanos + offset < end else { break }
            let due = start + .nanoseconds(Int64(offset))
            if ContinuousClock.now < due { try await Task.sleep(until: due, clock: .continuous) }
            let user = index % setup.users
            if marking { tracker.markSent(user: user, at: startNanos + offset) }
            load.submit(user: user, on: index)
            index += 1
        }
        return (index, (ContinuousClock.now - start).seconds)
    }

    /// Waits (at most a minute) until `count` publishes were answered or lost.
    private func waitForAnswers(_ tally: PublishTally, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while tally.completed < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the outbox is empty and the pushes stopped arriving (or `expected` arrived).
    private func drain(expecting expected: Int) async -> (seconds: Double, complete: Bool) {
        let start = ContinuousClock.now
        var last = -1
        var lastChange = start
        let limit = Duration.seconds(max(120, options.seconds * 4))
        while true {
            let delivered = tracker.delivered
            let now = ContinuousClock.now
            if delivered != last {
                last = delivered
                lastChange = now
            }
            let pending = await admin.pending()
            if pending == 0 && (delivered >= expected || now - lastChange > .milliseconds(500)) {
                return ((lastChange - start).seconds, true)
            }
            if now - lastChange > .seconds(15) || now - start > limit { return ((now - start).seconds, false) }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    private func share(_ part: Int, of whole: Int) -> Double { whole > 0 ? Double(part) / Double(whole) : .nan }
}
