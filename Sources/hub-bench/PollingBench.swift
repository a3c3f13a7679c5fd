import ArgumentParser
import Foundation
import HubCore
import JWTKit
import NIOCore
import NIOPosix
import Synchronization

/// `hub-bench polling`: what waiting costs — resident memory per idle long-poll and per event
/// stream at many connections, publish-to-wake latency with all of them parked, and how fast
/// SIGTERM lets the hub go with them all waiting.
struct PollingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "polling",
        abstract: "RSS per idle long-poll and event stream, publish → wake p50/p99, shutdown time.",
        discussion: """
            Starts `hub serve` (the `hub` beside this executable) on a generated hub.yaml (SQLite in a \
            temporary folder), parks --connections long-polls (one user each) from this process, reads VmRSS from \
            /proc before and after, publishes to --wakes of those users at --rate per second and \
            times each publish to the first byte of its long-poll's answer, then sends SIGTERM and \
            times the exit. Then the same hub fresh with as many event streams, and once more with as \
            many connections that send nothing (the floor every connection costs). Needs \
            --connections file descriptors in each process (the soft limit is raised to the hard one). Run a \
            release build: swift build -c release && .build/release/hub-bench polling.
            """)

    @Option(help: "Waiting connections of each kind.") var connections = 10_000
    @Option(help: "Publishes timed to their wake-up.") var wakes = 1_000
    @Option(help: "Publishes per second while timing wake-ups.") var rate = 200

    func run() async throws {
        let limit = BenchFiles.raiseOpenFileLimit()
        guard limit > rlim_t(connections + 200) else {
            throw ValidationError(
                "the open-file limit is \(limit); --connections \(connections) needs \(connections + 200) (this process holds one end of each, the hub the other)"
            )
        }
        let executable = try HubExecutable.path()
        let directory = try BenchFiles.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = (0..<connections).map { "user\($0)" }
        let tokens = try await BenchFiles.tokens(for: users)
        print("hub-bench polling — \(connections) connections, \(wakes) wake-ups at \(rate)/s")

        // Long-polls.
        var hub = try await ServedHub.start(executable: executable, directory: directory)
        let idleRSS = try await hub.settledRSS()
        var polls: [BenchConnection] = []
        for (user, token) in zip(users, tokens) {
            let connection = try await BenchConnection.open(port: hub.port)
            connection.send(BenchFiles.get("/v1/apps/bench.example.com/me/feed?wait=60", token: token, user: user))
            polls.append(connection)
        }
        try await hub.waitForWaiters(connections)
        let pollRSS = try await hub.settledRSS()
        let perPoll = (pollRSS - idleRSS) / Double(connections)
        print(
            String(
                format: "idle RSS %.1f MB; with %d long-polls %.1f MB: %.1f KiB per long-poll (target ≤ 8 KiB)",
                idleRSS / 1024, connections, pollRSS / 1024, perPoll))

        // Publish → wake.
        let publishers = try await (0..<8).asyncMap { _ in try await BenchConnection.open(port: hub.port) }
        let count = min(wakes, connections)
        var sent: [ContinuousClock.Instant] = []
        let start = ContinuousClock.now
        for index in 0..<count {
            let due = start + .seconds(Double(index) / Double(rate))
            if due > .now { try await Task.sleep(until: due, clock: .continuous) }
            sent.append(.now)
            publishers[index % publishers.count].send(BenchFiles.publish(user: users[index], id: "n\(index)"))
        }
        var latencies: [Double] = []
        let deadline = ContinuousClock.now + .seconds(30)
        for index in 0..<count {
            while polls[index].firstByte == nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            if let arrived = polls[index].firstByte { latencies.append((arrived - sent[index]).seconds * 1000) }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        print(
            String(
                format: "publish → wake: %d of %d woken, p50 %.1f ms, p99 %.1f ms (target p99 ≤ 20 ms)",
                latencies.count, count, percentile(0.5), percentile(0.99)))
        let exit = try await hub.stop()
        print(
            String(
                format: "SIGTERM with %d long-polls waiting: exited in %.2f s (target ≤ 2 s)", connections - count,
                exit.seconds))
        for connection in polls + publishers { connection.close() }

        // Event streams, on a fresh hub.
        hub = try await ServedHub.start(executable: executable, directory: directory)
        let idleAgain = try await hub.settledRSS()
        var streams: [BenchConnection] = []
        for (user, token) in zip(users, tokens) {
            let connection = try await BenchConnection.open(port: hub.port)
            connection.send(
                BenchFiles.get("/v1/apps/bench.example.com/me/feed", token: token, user: user, stream: true))
            streams.append(connection)
        }
        try await hub.waitForWaiters(connections)
        let streamRSS = try await hub.settledRSS()
        let perStream = (streamRSS - idleAgain) / Double(connections)
        print(
            String(
                format: "idle RSS %.1f MB; with %d event streams %.1f MB: %.1f KiB per stream (target ≤ 12 KiB)",
                idleAgain / 1024, connections, streamRSS / 1024, perStream))
        let streamExit = try await hub.stop()
        print(
            String(
                format: "SIGTERM with %d event streams: exited in %.2f s (target ≤ 2 s)", connections,
                streamExit.seconds))
        for connection in streams { connection.close() }

        // Connections that sent nothing: what any connection costs before its first request.
        hub = try await ServedHub.start(executable: executable, directory: directory)
        let idleThird = try await hub.settledRSS()
        var idle: [BenchConnection] = []
        for _ in 0..<connections { idle.append(try await BenchConnection.open(port: hub.port)) }
        let idleRSS3 = try await hub.settledRSS()
        print(
            String(
                format:
                    "idle RSS %.1f MB; with %d connections that sent nothing %.1f MB: %.1f KiB per connection (the floor under both: the NIO channel and its HTTP/1.1 pipeline)",
                idleThird / 1024, connections, idleRSS3 / 1024, (idleRSS3 - idleThird) / Double(connections)))
        _ = try await hub.stop()
        for connection in idle { connection.close() }
    }
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

    func waitForClose(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while !state.withLock({ $0.closed }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        state.withLock { state in
            if state.firstByte == nil { state.firstByte = .now }
            // Keep little: a long-poll's answer or a scrape's text.
            if state.bytes.readableBytes < 1 << 20 { state.bytes.writeBuffer(&buffer) }
        }
    }

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

    static func get(_ path: String, token: String, user: String, stream: Bool = false) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
            + (stream ? "Accept: text/event-stream\r\n" : "") + "\r\n"
    }

    static func publish(user: String, id: String) -> String {
        let body = #"{"appNotificationId":"\#(id)","payload":{"rawContent":"\#(id)"}}"#
        return "POST /v1/apps/bench.example.com/users/\(user)/notifications HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(publisherKey)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
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
