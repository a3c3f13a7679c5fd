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

/// A keep-alive publisher connection: times each request to the end of its response (responses
/// come in the order of the requests).
final class PublishConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private struct State {
        var sent: [ContinuousClock.Instant] = []
        var answered = 0
        var latencies: [Double] = []
        var refused = 0
        var bytes: [UInt8] = []
    }
    private let state = Mutex(State())
    private let channel = Mutex<(any Channel)?>(nil)

    static func open(port: Int) async throws -> PublishConnection {
        let connection = PublishConnection()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        connection.channel.withLock { $0 = channel }
        return connection
    }

    /// Requests sent and not yet answered.
    var pending: Int { state.withLock { $0.sent.count - $0.answered } }
    var latencies: [Double] { state.withLock { $0.latencies } }
    var refused: Int { state.withLock { $0.refused } }

    /// Sends `text`; the instant it was sent.
    func send(_ text: String) -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        state.withLock { $0.sent.append(now) }
        channel.withLock { $0 }?.writeAndFlush(ByteBuffer(string: text), promise: nil)
        return now
    }

    func close() { channel.withLock { $0 }?.close(promise: nil) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let now = ContinuousClock.now
        state.withLock { state in
            state.bytes.append(contentsOf: buffer.readableBytesView)
            while let (length, status) = Self.response(in: state.bytes), state.answered < state.sent.count {
                state.bytes.removeFirst(length)
                state.latencies.append((now - state.sent[state.answered]).seconds * 1000)
                state.answered += 1
                if !(200..<300).contains(status) { state.refused += 1 }
            }
        }
    }

    /// The length and status of the whole response at the start of `bytes`, if it has arrived.
    static func response(in bytes: [UInt8]) -> (length: Int, status: Int)? {
        guard bytes.count >= 4 else { return nil }
        var headEnd: Int?
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            headEnd = index + 4
            break
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        let status = lines.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var length = 0
        var chunked = false
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].lowercased()
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            if name == "content-length" { length = Int(value) ?? 0 }
            if name == "transfer-encoding" && value.lowercased().contains("chunked") { chunked = true }
        }
        guard chunked else { return bytes.count >= headEnd + length ? (headEnd + length, status) : nil }
        // A chunked body ends with a zero-length chunk.
        let terminator: [UInt8] = Array("0\r\n\r\n".utf8)
        guard bytes.count >= headEnd + terminator.count else { return nil }
        for index in headEnd...(bytes.count - terminator.count)
        where bytes[index..<(index + terminator.count)].elementsEqual(terminator) {
            return (index + terminator.count, status)
        }
        return nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// A `hub serve` child process of the bench.
struct ServedHub {
    let process: Process
    let port: Int

    static func start(executable: String, directory: URL) async throws -> ServedHub {
        try await start(executable: executable, config: directory.appendingPathComponent("hub.yaml").path)
    }

    /// Runs `hub serve --config config` and returns once it logged the port it listens on.
    static func start(executable: String, config: String) async throws -> ServedHub {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--config", config]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let log = Shared("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            log.withLock { $0 += text }
        }
        try process.run()
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(60) {
            let text = log.withLock { $0 }
            if let range = text.range(of: "hub listening on http://") {
                let address = text[range.upperBound...].prefix { !$0.isWhitespace }
                if let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) {
                    return ServedHub(process: process, port: port)
                }
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let exit = process.isRunning ? "running" : "\(process.terminationStatus)"
        process.terminate()
        throw ValidationError(
            "hub serve did not report listening within 60 s (exit: \(exit)):\n\(log.withLock { $0 })")
    }

    /// VmRSS in KiB once it stopped moving (two readings 1 s apart within 1%).
    func settledRSS() async throws -> Double {
        var last = readRSS()
        for _ in 0..<10 {
            try await Task.sleep(for: .seconds(1))
            let now = readRSS()
            if abs(now - last) <= last * 0.01 { return now }
            last = now
        }
        return last
    }

    private func readRSS() -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) } ?? 0
    }

    /// Scrapes `hub_feed_waiters` until it reaches `count` (at most 120 s).
    func waitForWaiters(_ count: Int) async throws {
        if count == 0 { return }
        let deadline = ContinuousClock.now + .seconds(120)
        var seen = 0
        while ContinuousClock.now < deadline {
            let scrape = try await BenchConnection.open(port: port)
            scrape.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            await scrape.waitForClose(timeout: .seconds(10))
            let line = scrape.received.split(separator: "\n").first { $0.hasPrefix("hub_feed_waiters ") }
            seen = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map(Int.init) ?? 0
            if seen >= count { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw ValidationError("only \(seen) of \(count) requests are waiting after 120 s")
    }

    /// CPU seconds (user and system) the hub has used so far.
    func cpuSeconds() -> Double {
        let stat = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)) ?? ""
        // The fields after the command name, which is in parentheses: utime and stime are the
        // 12th and 13th of them.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGTERM; how long until it exited.
    func stop() async throws -> Duration {
        let start = ContinuousClock.now
        process.terminate()
        while process.isRunning {
            guard ContinuousClock.now - start < .seconds(120) else { throw ValidationError("hub serve did not exit") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return ContinuousClock.now - start
    }
}

/// A raw client connection: writes requests as given, notes when the first byte came back.
final class BenchConnection: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private struct State {
        var firstByte: ContinuousClock.Instant?
        var closed = false
        var bytes = ByteBuffer()
        var repoll: String?
    }
    private let state = Mutex(State())
    private let channel = Mutex<(any Channel)?>(nil)

    static func open(port: Int) async throws -> BenchConnection {
        let connection = BenchConnection()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        connection.channel.withLock { $0 = channel }
        return connection
    }

    var firstByte: ContinuousClock.Instant? { state.withLock { $0.firstByte } }
    var received: String { state.withLock { String(buffer: $0.bytes) } }

    func send(_ text: String) {
        channel.withLock { $0 }?.writeAndFlush(ByteBuffer(string: text), promise: nil)
    }

    func close() { channel.withLock { $0 }?.close(promise: nil) }

    /// Waits until a whole response arrived (at most 60 s).
    func waitForResponse() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while PublishConnection.response(in: state.withLock { Array($0.bytes.readableBytesView) }) == nil {
            guard ContinuousClock.now < deadline else { throw ValidationError("no response within 60 s") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Forgets what arrived so far: the first byte is the next one.
    func forget() {
        state.withLock { state in
            state.firstByte = nil
            state.bytes.clear()
        }
    }

    func waitForClose(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while !state.withLock({ $0.closed }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let next = state.withLock { state -> String? in
            if state.firstByte == nil { state.firstByte = .now }
            // Keep little: a long-poll's answer or a scrape's text.
            if state.bytes.readableBytes < 1 << 20 { state.bytes.writeBuffer(&buffer) }
            // A device polling again after its answer, from the answer's cursor.
            guard let repoll = state.repoll,
                PublishConnection.response(in: Array(state.bytes.readableBytesView)) != nil
            else { return nil }
            state.repoll = nil
            let text = String(buffer: state.bytes)
            guard let range = text.range(of: #""cursor":""#) else { return nil }
            let cursor = text[range.upperBound...].prefix { $0 != "\"" }
            return repoll.replacingOccurrences(of: "CURSOR", with: String(cursor))
        }
        if let next { context.writeAndFlush(NIOAny(ByteBuffer(string: next)), promise: nil) }
    }

    /// After the next whole answer, sends `request` with its `CURSOR` replaced by the answer's cursor.
    func repollOnce(_ request: String) { state.withLock { $0.repoll = request } }

    func channelInactive(context: ChannelHandlerContext) {
        state.withLock { $0.closed = true }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// The bench's hub.yaml, tokens and requests.
enum BenchFiles {
    static let secret = "bench-user-token-secret-0123456789"
    static let publisherKey = "bench-publisher-key-0123456789"

    static func workspace() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-bench-polling-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try secret.write(to: directory.appendingPathComponent("user.secret"), atomically: true, encoding: .utf8)
        try publisherKey.write(to: directory.appendingPathComponent("publisher.key"), atomically: true, encoding: .utf8)
        let yaml = """
            server:
              listen: "127.0.0.1:0"
              connections: { max: 100000, maxPerClient: 100000, headerTimeout: 1h }
            store: { sqlite: { path: hub.sqlite } }
            logging: { level: notice }
            rateLimits: { publisherKey: off, userPublishes: off, deviceToken: off, clientIP: off }
            apps:
              - id: bench.example.com
                platforms: { windows: { appIds: [Bench.App_8wekyb3d8bbwe] } }
                identity:
                  - { issuer: "https://login.example.com", audiences: [bench], secret: file:user.secret }
                publishers: [ { name: bench, key: file:publisher.key } ]
            """
        try yaml.write(to: directory.appendingPathComponent("hub.yaml"), atomically: true, encoding: .utf8)
        return directory
    }

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func tokens(for users: [String]) async throws -> [String] {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        var tokens: [String] = []
        for user in users {
            tokens.append(
                try await keys.sign(
                    Claims(
                        sub: SubjectClaim(value: user), iss: IssuerClaim(value: "https://login.example.com"),
                        aud: AudienceClaim(value: "bench"), exp: ExpirationClaim(value: Date().addingTimeInterval(3600))
                    )))
        }
        return tokens
    }

    static func get(_ path: String, token: String, endpoint: String? = nil, stream: Bool = false) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + (endpoint.map { "X-Hub-Endpoint: \($0)\r\n" } ?? "") + (stream ? "Accept: text/event-stream\r\n" : "")
            + "\r\n"
    }

    /// Registers the polling endpoint `device` of the token's user.
    static func registerPolling(token: String) -> String {
        let body = #"{"platform":"windows","appId":"Bench.App_8wekyb3d8bbwe","transport":"polling"}"#
        return "PUT /v1/apps/bench.example.com/me/endpoints/device HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func publish(user: String, id: String) -> String {
        let body = #"{"appNotificationId":"\#(id)","payload":{"rawContent":"\#(id)"}}"#
        return "POST /v1/apps/bench.example.com/users/\(user)/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(publisherKey)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// The load averages over 1, 5 and 15 minutes, as /proc/loadavg has them.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// Raises the soft open-file limit to the hard one; returns the new soft limit.
    static func raiseOpenFileLimit() -> rlim_t {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return limit.rlim_cur
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var values: [T] = []
        for element in self { values.append(try await transform(element)) }
        return values
    }
}
