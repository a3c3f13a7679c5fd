import ArgumentParser
import Foundation
import HubCore
import JWTKit
import NIOCore
import NIOPosix
import Synchronization

/// `hub-bench polling`: what waiting costs — publish → wake latency and the publish request's own
/// latency at a steady rate with no, some and many long-polls waiting (the first run is the floor,
/// so the cost of waiting reads as a ratio), resident memory per waiting long-poll, event stream
/// and silent connection, the hub's CPU while they wait, and how fast SIGTERM lets the hub go.
struct PollingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "polling",
        abstract: "Publish → wake and HTTP publish p50/p99 by waiters, RSS per waiting connection, idle CPU.",
        discussion: """
            For each count of --waiters (0 first: the floor), starts `hub serve` (the `hub` beside this \
            executable, or --hub) on a generated hub.yaml (SQLite in a fresh temporary folder), registers a \
            polling endpoint for each waiting user and parks that many long-polls as those endpoints (one \
            user each; --anonymous: without endpoints) from this process; a woken device polls again at once \
            (--no-repoll: it does not). Then it publishes --wakes notifications at \
            --rate per second over --publishers keep-alive connections, each to a distinct user (a \
            waiting one when any wait), and times each publish to its response (HTTP publish) and to \
            the first byte of its long-poll's answer (publish → wake). The run with the most waiters \
            also reads VmRSS before and after parking (KiB per long-poll), the hub's CPU over \
            --idle-seconds while they wait, and the time SIGTERM takes. Then (unless --wake-only) as many \
            long-polls without endpoints (the figure per waiting long-poll to quote), \
            as many event streams, and as many connections that send nothing (the floor every \
            connection costs). Each line ends with the load average, since the figures depend on what \
            else runs. Needs that many file descriptors in each process (the soft limit is raised to \
            the hard one). Run a release build: swift build -c release && .build/release/hub-bench polling.
            """)

    @Option(help: "Waiting long-polls of each timed run, comma-separated (0: the floor, no waiters).")
    var waiters = "0,2000,10000"
    @Option(help: "Publishes timed in each run (at most the waiters of a run that has any).") var wakes = 2_000
    @Option(help: "Publishes per second.") var rate = 1_000
    @Option(help: "Keep-alive connections the publishes are spread over.") var publishers = 64
    @Option(help: "Seconds the hub's CPU is read while the most long-polls wait.") var idleSeconds = 5
    @Option(help: "The hub executable (default: the `hub` beside hub-bench).") var hub: String?
    @Flag(help: "Only the timed runs: no event-stream and silent-connection memory runs.") var wakeOnly = false
    @Flag(help: "Long-poll without a polling endpoint (by default each waiter registers one and polls as it).")
    var anonymous = false
    @Flag(help: "A woken device does not poll again (by default it sends its next long-poll at once, as devices do).")
    var noRepoll = false

    func run() async throws {
        let counts = waiters.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 >= 0 }) else {
            throw ValidationError("--waiters takes counts separated by commas, such as 0,2000,10000")
        }
        let most = counts.max() ?? 0
        let limit = BenchFiles.raiseOpenFileLimit()
        guard limit > rlim_t(most + publishers + 200) else {
            throw ValidationError(
                "the open-file limit is \(limit); \(most) waiters need \(most + publishers + 200) (this process holds one end of each, the hub the other)"
            )
        }
        let executable = try hub ?? HubExecutable.path()
        let users = (0..<max(most, wakes)).map { "user\($0)" }
        let tokens = try await BenchFiles.tokens(for: Array(users.prefix(most)))
        print(
            "hub-bench polling — \(wakes) publishes per run at \(rate)/s over \(publishers) connections; waiting long-polls: \(counts.map(String.init).joined(separator: ", ")); hub \(executable)"
        )
        var floor: WakeRun?
        for count in counts {
            let run = try await wakeRun(
                waiting: count, measuresIdle: count == most, executable: executable, users: users, tokens: tokens)
            print(run.line(floor: floor))
            if count == 0 && floor == nil { floor = run }
        }
        if wakeOnly || most == 0 { return }
        try await memoryRuns(connections: most, executable: executable, users: users, tokens: tokens)
    }

    /// One timed run: `waiting` long-polls parked on a fresh hub, then the publishes at `rate`.
    private func wakeRun(
        waiting: Int, measuresIdle: Bool, executable: String, users: [String], tokens: [String]
    ) async throws -> WakeRun {
        let directory = try BenchFiles.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        let hub = try await ServedHub.start(executable: executable, directory: directory)
        var run = WakeRun(waiting: waiting)
        if !anonymous {
            // A polling device registers its endpoint first; here over a few pipelined connections,
            // closed before the memory is read.
            let registrars = try await (0..<min(publishers, max(waiting, 1))).asyncMap { _ in
                try await PublishConnection.open(port: hub.port)
            }
            for (index, token) in tokens.prefix(waiting).enumerated() {
                _ = registrars[index % registrars.count].send(BenchFiles.registerPolling(token: token))
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while registrars.contains(where: { $0.pending > 0 }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let refused = registrars.reduce(0) { $0 + $1.refused }
            guard refused == 0, !registrars.contains(where: { $0.pending > 0 }) else {
                throw ValidationError("\(refused) endpoint registrations refused, or some unanswered after 120 s")
            }
            for registrar in registrars { registrar.close() }
        }
        let idleRSS = measuresIdle ? try await hub.settledRSS() : 0
        var polls: [BenchConnection] = []
        for token in tokens.prefix(waiting) {
            let connection = try await BenchConnection.open(port: hub.port)
            let endpoint = anonymous ? nil : "device"
            if !noRepoll {
                connection.repollOnce(
                    BenchFiles.get(
                        "/v1/apps/bench.example.com/me/feed?wait=60&cursor=CURSOR", token: token, endpoint: endpoint))
            }
            connection.send(
                BenchFiles.get("/v1/apps/bench.example.com/me/feed?wait=60", token: token, endpoint: endpoint))
            polls.append(connection)
        }
        try await hub.waitForWaiters(waiting)
        if measuresIdle && waiting > 0 {
            let pollRSS = try await hub.settledRSS()
            run.memory = (idleRSS / 1024, pollRSS / 1024, (pollRSS - idleRSS) / Double(waiting))
            let before = hub.cpuSeconds()
            try await Task.sleep(for: .seconds(idleSeconds))
            run.idleCPU = (hub.cpuSeconds() - before) / Double(idleSeconds)
        }

        // The publishes, each to a distinct user; a connection takes the next one only when its
        // last was answered, unless all are busy.
        let connections = try await (0..<publishers).asyncMap { _ in try await PublishConnection.open(port: hub.port) }
        let count = waiting > 0 ? min(wakes, waiting) : wakes
        var sent: [ContinuousClock.Instant] = []
        sent.reserveCapacity(count)
        let cpuBefore = hub.cpuSeconds()
        let start = ContinuousClock.now
        for index in 0..<count {
            let due = start + .seconds(Double(index) / Double(rate))
            if due > .now { try await Task.sleep(until: due, clock: .continuous) }
            let first = index % connections.count
            let free = (0..<connections.count).lazy.map { connections[(first + $0) % connections.count] }
                .first { $0.pending == 0 }
            let connection = free ?? connections.min { $0.pending < $1.pending }!
            sent.append(connection.send(BenchFiles.publish(user: users[index], id: "n\(index)")))
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while connections.contains(where: { $0.pending > 0 }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        for index in 0..<min(count, polls.count) {
            while polls[index].firstByte == nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            if let arrived = polls[index].firstByte { run.wakes.append((arrived - sent[index]).seconds * 1000) }
        }
        run.cpuPerThousand = (hub.cpuSeconds() - cpuBefore) / Double(count) * 1000
        run.publishes = connections.flatMap(\.latencies)
        run.refused = connections.reduce(0) { $0 + $1.refused }
        run.count = count
        run.load = BenchFiles.loadAverage()
        if measuresIdle {
            run.exit = (waiting - min(count, waiting), try await hub.stop())
        } else {
            _ = try await hub.stop()
        }
        for connection in polls { connection.close() }
        for connection in connections { connection.close() }
        return run
    }

    /// Memory per event stream and per connection that sent nothing, `connections` of each, each
    /// on a fresh hub.
    private func memoryRuns(connections: Int, executable: String, users: [String], tokens: [String]) async throws {
        let directory = try BenchFiles.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Long-polls without an endpoint on a fresh hub: what a waiting long-poll costs, nothing
        // else having run before.
        var hub = try await ServedHub.start(executable: executable, directory: directory)
        let idlePolls = try await hub.settledRSS()
        var polls: [BenchConnection] = []
        for token in tokens.prefix(connections) {
            let connection = try await BenchConnection.open(port: hub.port)
            connection.send(BenchFiles.get("/v1/apps/bench.example.com/me/feed?wait=60", token: token))
            polls.append(connection)
        }
        try await hub.waitForWaiters(connections)
        let pollRSS = try await hub.settledRSS()
        print(
            String(
                format: "idle RSS %.1f MB; with %d long-polls %.1f MB: %.1f KiB per long-poll (target ≤ 8 KiB)",
                idlePolls / 1024, connections, pollRSS / 1024, (pollRSS - idlePolls) / Double(connections))
                + "; load \(BenchFiles.loadAverage())")
        _ = try await hub.stop()
        for connection in polls { connection.close() }

        hub = try await ServedHub.start(executable: executable, directory: directory)
        let idle = try await hub.settledRSS()
        var streams: [BenchConnection] = []
        for token in tokens.prefix(connections) {
            let connection = try await BenchConnection.open(port: hub.port)
            connection.send(
                BenchFiles.get("/v1/apps/bench.example.com/me/feed", token: token, stream: true))
            streams.append(connection)
        }
        try await hub.waitForWaiters(connections)
        let streamRSS = try await hub.settledRSS()
        print(
            String(
                format:
                    "idle RSS %.1f MB; with %d event streams %.1f MB: %.1f KiB per stream (target ≤ 12 KiB)",
                idle / 1024, connections, streamRSS / 1024, (streamRSS - idle) / Double(connections))
                + "; load \(BenchFiles.loadAverage())")
        let streamExit = try await hub.stop()
        print(
            String(
                format: "SIGTERM with %d event streams: exited in %.2f s (target ≤ 2 s)", connections,
                streamExit.seconds))
        for connection in streams { connection.close() }

        // Connections that sent nothing: what any connection costs before its first request.
        hub = try await ServedHub.start(executable: executable, directory: directory)
        let idleAgain = try await hub.settledRSS()
        var silent: [BenchConnection] = []
        for _ in 0..<connections { silent.append(try await BenchConnection.open(port: hub.port)) }
        let silentRSS = try await hub.settledRSS()
        print(
            String(
                format:
                    "idle RSS %.1f MB; with %d connections that sent nothing %.1f MB: %.1f KiB per connection (the floor under both: the NIO channel and its HTTP/1.1 pipeline)",
                idleAgain / 1024, connections, silentRSS / 1024, (silentRSS - idleAgain) / Double(connections))
                + "; load \(BenchFiles.loadAverage())")
        _ = try await hub.stop()
        for connection in silent { connection.close() }
    }
}

/// What one timed run measured.
struct WakeRun {
    let waiting: Int
    var count = 0
    /// Milliseconds from each publish sent to the first byte of its long-poll's answer.
    var wakes: [Double] = []
    /// Milliseconds from each publish sent to its whole response.
    var publishes: [Double] = []
    /// Publishes answered with anything but 2xx.
    var refused = 0
    var cpuPerThousand = 0.0
    /// MB before and after parking, KiB per long-poll (the run with the most waiters).
    var memory: (idle: Double, waiting: Double, perPoll: Double)?
    /// CPU seconds per second while the long-polls wait (the run with the most waiters).
    var idleCPU: Double?
    /// Long-polls still waiting at SIGTERM and the time the hub took to exit.
    var exit: (waiting: Int, after: Duration)?
    var load = ""

    /// The run's lines; with `floor` (the run without waiters) the ratios to its publish latency.
    func line(floor: WakeRun?) -> String {
        let publish = Percentiles(publishes)
        var lines: [String] = []
        if let memory {
            lines.append(
                String(
                    format:
                        "RSS %.1f MB after the endpoints registered; with %d long-polls %.1f MB: %.1f KiB per long-poll (the heap the registrations freed is reused: the memory run's figure is the one to quote)",
                    memory.idle, waiting, memory.waiting, memory.perPoll))
        }
        if let idleCPU {
            lines.append(
                String(
                    format: "idle CPU with %d long-polls waiting: %.2f %% of a core (target ≤ 3 %%)", waiting,
                    idleCPU * 100))
        }
        var text = String(
            format: "%5d waiting: HTTP publish p50 %.1f ms, p99 %.1f ms", waiting, publish.p50, publish.p99)
        if waiting > 0 {
            let wake = Percentiles(wakes)
            text += String(
                format: "; publish → wake p50 %.1f ms, p99 %.1f ms (%d of %d woken)", wake.p50, wake.p99, wakes.count,
                min(count, waiting))
            if let floor {
                let base = Percentiles(floor.publishes)
                text += String(
                    format: "; × floor's publish: publish %.1f / %.1f, wake %.1f / %.1f (p50 / p99)",
                    publish.p50 / base.p50, publish.p99 / base.p99, wake.p50 / base.p50, wake.p99 / base.p99)
            }
        } else {
            text += " (the floor: nobody waits)"
        }
        text += String(format: "; %.2f CPU-s per 1,000 publishes", cpuPerThousand)
        if publishes.count < count { text += "; \(count - publishes.count) of \(count) publishes unanswered" }
        if refused > 0 { text += "; \(refused) refused" }
        text += "; load \(load)"
        lines.append(text)
        if waiting > 0 && (wakes.count < min(count, waiting)) {
            lines.append("  (some long-polls were not woken in 30 s)")
        }
        if let exit {
            lines.append(
                String(
                    format: "SIGTERM with %d long-polls waiting: exited in %.2f s (target ≤ 2 s)", exit.waiting,
                    exit.after.seconds))
        }
        return lines.joined(separator: "\n")
    }
}

/// p50 and p99 of some milliseconds (NaN when there are none).
struct Percentiles {
    let p50: Double
    let p99: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        func at(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        p50 = at(0.5)
        p99 = at(0.99)
    }
}
