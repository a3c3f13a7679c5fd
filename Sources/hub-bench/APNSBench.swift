import ArgumentParser
import Foundation
import HubAPNS
import HubConfig
import HubCore
import HubEmulators
import Logging
import NIOCore
import NIOPosix

/// `hub-bench apns`: the APNs transport's throughput against the emulator, next to h2load's with
/// the same requests, so the figure says how much of the wire's capacity the transport reaches.
struct APNSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "APNs transport notifications/s and CPU per 1,000 against the emulator, then h2load's rate.",
        discussion: """
            Run a release build: swift run -c release hub-bench apns. h2load comes with Debian's \
            nghttp2-client package (apt-get install nghttp2-client); without it the ratio is skipped. \
            Transport and h2load runs alternate for --rounds rounds and the medians are reported, so a \
            burst of load from elsewhere on the machine skews one round, not the result.
            """)

    @Option(help: "Notifications in the measured run (and requests for h2load).") var notifications = 100_000
    @Option(help: "Connections (the transport's maxConnections, h2load -c).") var connections = 4
    @Option(help: "Streams per connection (maxStreamsPerConnection, h2load -m).") var streams = 100
    @Option(help: "Notifications sent first to open connections and warm up.") var warmup = 5_000
    @Option(help: "Rounds of one transport run then one h2load run; the medians are the result.") var rounds = 3

    static let bundleID = "com.example.bench"
    static let token = String(repeating: "5a", count: 32)

    func run() async throws {
        var settings = APNSEmulator.Configuration()
        settings.recordsRequests = false
        // Why requests were refused, so a run that measured refusals says so.
        let refusals = Shared<[String: Int]>([:])
        settings.onRefusal = { request in
            refusals.withLock {
                $0["\(request.status) \(request.reason ?? ""): \(request.note ?? "")", default: 0] += 1
            }
        }
        // The emulator stands in for Apple's servers, so it gets event loops of its own, as the
        // server h2load talks to has: in NIO's shared group, whose round-robin the transport's
        // connections also draw from, its connections could pile onto one thread.
        let emulatorLoops = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        settings.eventLoopGroup = emulatorLoops
        let emulator = try await APNSEmulator.start(settings)
        let key = APNSTestKey(keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
        emulator.register(key, bundleIDs: [Self.bundleID])
        var configuration = APNSTransport.Configuration(
            productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: emulator.port,
            trustRoots: .pem(emulator.trustRootPEM))
        configuration.maxConnections = connections
        configuration.maxStreamsPerConnection = streams
        configuration.requestTimeout = .seconds(60)
        let transport = APNSTransport(configuration: configuration, logger: Logger(label: "bench.apns"))
        let delivery = Self.delivery(credentials: key.credentials())

        print(
            "hub-bench apns — \(notifications) shoulder taps, \(connections) connections × \(streams) streams, "
                + "\(rounds) rounds of transport then h2load")
        _ = try await Self.push(warmup, through: transport, delivery: delivery, concurrency: connections * streams)
        var rates: [Double] = []
        var h2loadRates: [Double] = []
        var ratios: [Double] = []
        for round in 1...max(1, rounds) {
            let usage = ProcessUsage()
            let start = ContinuousClock.now
            let accepted = try await Self.push(
                notifications, through: transport, delivery: delivery, concurrency: connections * streams)
            let seconds = (ContinuousClock.now - start).seconds
            let cpu = usage.elapsedSelf
            let rate = Double(notifications) / seconds
            rates.append(rate)
            print(
                String(
                    format: "round %d transport: %d accepted of %d in %.2f s = %.0f notifications/s; %.4f CPU-s per "
                        + "1,000 (transport and emulator, one process)", round, accepted, notifications, seconds, rate,
                    cpu / Double(notifications) * 1000))
            Self.report(refusals, of: "round \(round) transport")
            guard let h2load = try await Self.h2load(self, round: round, emulator: emulator, key: key) else { continue }
            Self.report(refusals, of: "round \(round) h2load")
            h2loadRates.append(h2load)
            ratios.append(rate / h2load)
            print(String(format: "round %d transport / h2load = %.2f", round, rate / h2load))
        }
        await transport.shutdown()
        print(
            String(
                format: "median: transport %.0f notifications/s, h2load %@ requests/s, transport / h2load = %@ "
                    + "(targets: ≥ 10,000/s and ≥ 0.6)", BenchCommand.median(rates),
                h2loadRates.isEmpty ? "-" : String(format: "%.0f", BenchCommand.median(h2loadRates)),
                ratios.isEmpty ? "-" : String(format: "%.2f", BenchCommand.median(ratios))))
        await emulator.shutdown()
        try await emulatorLoops.shutdownGracefully()
    }

    /// Prints what the emulator refused since the last report, so a rate that counts refusals says
    /// so and whose requests they were; then starts counting afresh.
    static func report(_ refusals: Shared<[String: Int]>, of run: String) {
        let refused = refusals.withLock { refused in
            defer { refused = [:] }
            return refused
        }
        if !refused.isEmpty { print("\(run): requests refused by the emulator: \(refused)") }
    }

    /// Sends `count` copies of `delivery` with `concurrency` in flight; returns how many were accepted.
    static func push(
        _ count: Int, through transport: APNSTransport, delivery: OutboundDelivery, concurrency: Int
    ) async throws -> Int {
        let next = Shared(0)
        return await withTaskGroup(of: Int.self) { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask {
                    var accepted = 0
                    while next.withLock({ value -> Bool in
                        value += 1
                        return value <= count
                    }) {
                        if await transport.send(delivery) == .accepted { accepted += 1 }
                    }
                    return accepted
                }
            }
            return await group.reduce(0, +)
        }
    }

    static func delivery(credentials: APNSCredentials) -> OutboundDelivery {
        let now = Date()
        let app = CrossDeviceApp(
            id: "bench.example.com", name: "Bench", platforms: [.ios: [bundleID]],
            credentials: PushCredentials([credentials]))
        let endpoint = Endpoint(
            id: "phone", appId: app.id, userId: "user", platform: .ios, platformAppId: bundleID, transport: .apns,
            token: token, attributes: ["environment": "production"], registeredAt: now)
        let delivery = Delivery(
            id: 1, appId: app.id, userId: "user", endpointId: "phone", kind: .shoulderTap, notificationId: nil,
            changeVersion: 1, priority: .none, createdAt: now, dueAt: now)
        return OutboundDelivery(delivery: delivery, endpoint: endpoint, app: app, notification: nil)
    }
}

/// CPU time of this process and of its finished children, from getrusage(2).
struct ProcessUsage {
    private let selfStart = Self.seconds(RUSAGE_SELF.rawValue)
    private let childrenStart = Self.seconds(RUSAGE_CHILDREN.rawValue)

    var elapsedSelf: Double { Self.seconds(RUSAGE_SELF.rawValue) - selfStart }
    var elapsedChildren: Double { Self.seconds(RUSAGE_CHILDREN.rawValue) - childrenStart }

    private static func seconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return value(usage.ru_utime) + value(usage.ru_stime)
    }
}

extension APNSBench {
    /// Runs h2load against the emulator with the request the transport sends for a shoulder tap
    /// (same path, headers, provider token and body; h2load cannot vary `apns-id`, so it sends none).
    ///
    /// - Returns: h2load's requests/s, or `nil` when h2load is not installed or failed.
    static func h2load(
        _ bench: APNSBench, round: Int, emulator: APNSEmulator, key: APNSTestKey
    ) async throws -> Double? {
        guard let h2load = H2Load.find() else {
            if round == 1 {
                print("h2load: not installed; install it with `apt-get install nghttp2-client` for the ratio")
            }
            return nil
        }
        let body = try APNSPayload.background(
            APNSBackgroundPayload(custom: ["hub": ["app": "bench.example.com", "v": 1]])
        ).encoded()
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-\(UUID()).json")
        try Data(body).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let jwt = try await key.providerToken()
        let arguments = [
            "-n", String(bench.notifications), "-c", String(bench.connections), "-m", String(bench.streams),
            "-H", "apns-push-type: background", "-H", "apns-topic: \(bundleID)", "-H", "apns-priority: 5",
            "-H", "apns-expiration: 0", "-H", "authorization: bearer \(jwt)", "-d", bodyFile.path,
            "https://127.0.0.1:\(emulator.port)/3/device/\(token)",
        ]
        let usage = ProcessUsage()
        let (status, text) = try h2load.capture(arguments)
        let emulatorCPU = usage.elapsedSelf
        let h2loadCPU = usage.elapsedChildren
        guard status == 0, let rate = Self.rate(in: text) else {
            print("h2load failed (exit \(status)):\n\(text)")
            return nil
        }
        let succeeded = text.split(separator: "\n").first { $0.contains("status codes:") } ?? "status codes: ?"
        print(
            String(
                format:
                    "round %d h2load:    %.0f requests/s (%@); %.4f CPU-s per 1,000 in the emulator, %.4f in h2load",
                round, rate, succeeded.trimmingCharacters(in: .whitespaces),
                emulatorCPU / Double(bench.notifications) * 1000,
                h2loadCPU / Double(bench.notifications) * 1000))
        return rate
    }

    /// The rate in h2load's `finished in 1.23s, 81234.56 req/s, …` line.
    static func rate(in output: String) -> Double? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }) else {
            return nil
        }
        let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let field = fields.first(where: { $0.hasSuffix("req/s") }) else { return nil }
        return Double(field.dropLast(" req/s".count))
    }
}
