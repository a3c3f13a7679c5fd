import ArgumentParser
import Foundation
import HubCore
import HubEmulators
import HubFCM

/// `hub-bench fcm`: the FCM transport's throughput and CPU cost against the FCM emulator over one
/// h2 connection, next to h2load's rate against the same emulator with the same body and headers.
struct FCMBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "FCM transport notifications/s and CPU per 1,000, compared with h2load on the same emulator.",
        discussion: """
            Run a release build: swift build -c release --product hub-bench && .build/release/hub-bench fcm. \
            h2load comes from the nghttp2-client package (apt-get install nghttp2-client).
            """)

    @Option(help: "Notifications to send in the measured phase.") var notifications = 20_000
    @Option(help: "Sends in flight at once (h2load: streams per connection, -m).") var concurrency = 100
    @Option(help: "Unmeasured sends first (connection, access token, warm caches).") var warmup = 2_000

    func run() async throws {
        let emulator = try await FCMEmulator.start(ownThread: true)
        let account = FCMTestServiceAccount.primary
        try await emulator.register(account)
        emulator.setRecordsMessages(false)
        let transport = try FCMTransport(
            configuration: FCMConfiguration(sendBaseURL: emulator.baseURL, trustRootsPEM: [emulator.trustRootPEM]))
        let app = CrossDeviceApp(
            id: "bench.example.com", name: "Bench", platforms: [.android: [Self.package]],
            credentials: PushCredentials([account.credentials(tokenURI: emulator.tokenURI)]))

        _ = try await send(warmup, through: transport, app: app)
        let before = CPUTime.now()
        let start = ContinuousClock.now
        let failures = try await send(notifications, through: transport, app: app)
        let elapsed = (ContinuousClock.now - start).seconds
        let cpu = CPUTime.now() - before
        let rate = Double(notifications) / elapsed
        var lines = [
            "hub-bench fcm — \(notifications) taps, \(concurrency) in flight, FCM emulator over h2 on 127.0.0.1",
            String(
                format: "FCM transport: %d sent (%d not accepted) in %.2f s = %.0f notifications/s",
                notifications, failures, elapsed, rate),
            String(
                format: "CPU: %.3f s per 1,000 notifications (this process: transport and emulator together)",
                cpu / Double(notifications) * 1000),
        ]
        let body = Self.tapBody()
        if let h2load = H2Load.find() {
            let cpuBefore = CPUTime.now()
            let result = try h2load.run(
                url: "\(emulator.baseURL)/v1/projects/\(account.projectID)/messages:send", body: body,
                headers: [
                    "authorization: Bearer \(emulator.issueAccessToken(project: account.projectID))",
                    "content-type: application/json; charset=UTF-8",
                ], requests: notifications, streams: concurrency)
            let emulatorCPU = (CPUTime.now() - cpuBefore) / Double(notifications) * 1000
            let total = cpu / Double(notifications) * 1000
            lines += [
                String(
                    format:
                        "emulator alone (measured while h2load ran): %.3f s per 1,000 → transport ≈ %.3f s per 1,000",
                    emulatorCPU, max(0, total - emulatorCPU)),
                String(
                    format: "h2load (-c 1 -m %d, same body and headers): %.0f requests/s, %d of %d 2xx",
                    concurrency, result.rate, result.succeeded, notifications),
                String(format: "ratio FCM transport / h2load: %.2f (target ≥ 0.5)", rate / result.rate),
            ]
        } else {
            lines.append("h2load not found: install it with `apt-get install nghttp2-client` to compare; ratio skipped")
        }
        print(lines.joined(separator: "\n"))
        try await transport.shutdown()
        try await emulator.shutdown()
    }

    static let package = "com.example.bench"

    /// The body the transport sends for a tap, for h2load.
    static func tapBody() -> [UInt8] {
        FCMMessage(
            target: .token("bench-device-token"), data: ["hub": "tap", "app": "bench.example.com", "v": "1"],
            android: FCMAndroidConfig(
                priority: .normal, timeToLive: .seconds(86_400), collapseKey: "hub-tap", restrictedPackageName: package)
        ).requestBody()
    }

    /// Sends `count` taps with ``concurrency`` in flight. - Returns: how many were not accepted.
    private func send(_ count: Int, through transport: FCMTransport, app: CrossDeviceApp) async throws -> Int {
        let next = Shared(0)
        let failures = Shared(0)
        let now = Date()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask {
                    while true {
                        let index = next.withLock { value -> Int in
                            value += 1
                            return value
                        }
                        guard index <= count else { return }
                        let endpoint = Endpoint(
                            id: "e\(index)", appId: app.id, userId: "u\(index % 1000)", platform: .android,
                            platformAppId: Self.package, transport: .fcm, token: "bench-token-\(index)",
                            registeredAt: now)
                        let delivery = Delivery(
                            id: Int64(index), appId: app.id, userId: endpoint.userId, endpointId: endpoint.id,
                            kind: .shoulderTap, notificationId: nil, changeVersion: Int64(index), priority: .none,
                            createdAt: now, dueAt: now)
                        let outcome = await transport.send(
                            OutboundDelivery(delivery: delivery, endpoint: endpoint, app: app, notification: nil))
                        if outcome != .accepted { failures.withLock { $0 += 1 } }
                    }
                }
            }
        }
        return failures.withLock { $0 }
    }
}

/// User plus system CPU seconds of this process (getrusage).
enum CPUTime {
    static func now() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// The h2load load generator (nghttp2), run as a child process.
struct H2Load {
    let path: String

    /// Runs h2load with `arguments` until it exits.
    /// - Returns: its exit status and its standard output and error together.
    func capture(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    static func find() -> H2Load? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        for directory in directories {
            let candidate = "\(directory)/h2load"
            if FileManager.default.isExecutableFile(atPath: candidate) { return H2Load(path: candidate) }
        }
        return nil
    }

    /// Posts `body` `requests` times over one connection with `streams` concurrent streams.
    func run(
        url: String, body: [UInt8], headers: [String], requests: Int, streams: Int
    ) throws -> (rate: Double, succeeded: Int) {
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hub-bench-\(UUID().uuidString).json")
        try Data(body).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let (_, text) = try capture(
            ["-n", String(requests), "-c", "1", "-m", String(streams), "-d", bodyFile.path]
                + headers.flatMap { ["-H", $0] } + [url])
        // "finished in 1.23s, 16260.16 req/s, 2.02MB/s" and "status codes: 20000 2xx, 0 3xx, 0 4xx, 0 5xx"
        let rate = text.firstMatch(of: /finished in [0-9.]+m?s, ([0-9.]+) req\/s/).flatMap { Double($0.1) }
        let succeeded = text.firstMatch(of: /status codes: ([0-9]+) 2xx/).flatMap { Int($0.1) }
        guard let rate, let succeeded else {
            throw ValidationError("h2load did not report a rate:\n\(text)")
        }
        return (rate, succeeded)
    }
}
