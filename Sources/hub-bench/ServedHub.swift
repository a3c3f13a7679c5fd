import ArgumentParser
import Foundation
import HubCore
import JWTKit
import NIOCore
import NIOPosix
import Synchronization

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
