import Foundation
import HubAPNS
import HubCore
import HubEmulators
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The device tokens of `hub-bench pipeline`'s endpoints: 32 bytes of hex whose middle names the
/// user, so the emulator side can tell whose taps arrive without asking the hub.
enum PipelineToken {
    private static let prefix = String(repeating: "b", count: 40)

    /// 40 × `b`, the user in 16 hex digits, the endpoint in 8.
    static func make(user: Int, endpoint: Int) -> String {
        prefix + hex(user, width: 16) + hex(endpoint, width: 8)
    }

    /// The user and endpoint a token of ``make(user:endpoint:)`` names; `nil` for any other token.
    static func parse(_ token: String) -> (user: Int, endpoint: Int)? {
        let bytes = token.utf8
        guard bytes.count == 64 else { return nil }
        var user = 0
        var endpoint = 0
        for (offset, byte) in bytes.dropFirst(40).enumerated() {
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if offset < 16 { user = user << 4 | digit } else { endpoint = endpoint << 4 | digit }
        }
        return (user, endpoint)
    }

    private static func hex(_ value: Int, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// Nanoseconds of CLOCK_MONOTONIC: one clock for publish times (load side) and arrival times
/// (emulator side), both in the bench process.
enum Monotonic {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// The APNs emulator of a bench run, on event loops of its own as Apple's servers are (see
/// `hub-bench apns`): every request goes to `tracker` (none is recorded), the workspace's key is
/// registered, and the emulator's CA is in the workspace at ``caPath`` for the hub's `trustRoots`.
struct BenchAPNSEmulator {
    let emulator: APNSEmulator
    let caPath: String
    private let loops: MultiThreadedEventLoopGroup

    static func start(workspace: PipelineWorkspace, tracker: ArrivalTracker) async throws -> BenchAPNSEmulator {
        var settings = APNSEmulator.Configuration()
        settings.recordsRequests = false
        settings.onRequest = { tracker.record($0) }
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        settings.eventLoopGroup = loops
        let emulator = try await APNSEmulator.start(settings)
        emulator.register(workspace.key, bundleIDs: [APNSBench.bundleID])
        let caPath = workspace.directory.appendingPathComponent("ca.pem").path
        try emulator.certificateAuthority.writeCertificatePEM(to: caPath)
        return BenchAPNSEmulator(emulator: emulator, caPath: caPath, loops: loops)
    }

    var port: Int { emulator.port }

    func shutdown() async {
        await emulator.shutdown()
        try? await loops.shutdownGracefully()
    }
}

/// What arrived at the emulator: every push it accepted, attributed to its user by the token;
/// in the latency phase also publish → provider times.
final class ArrivalTracker: Sendable {
    struct State {
        /// Pushes answered 200 since the last ``reset()``.
        var delivered = 0
        /// Accepted pushes whose token is not one of ``PipelineToken``'s (the transport-alone phase).
        var unattributed = 0
        /// Refusals by "status reason: note".
        var refused: [String: Int] = [:]
        /// Accepted pushes per endpoint, at `user × endpointsPerUser + endpoint`.
        var tapsPerEndpoint: [Int32]
        /// When the latency phase's publish for each user was due (``Monotonic`` ns; 0 = none).
        var sentAt: [UInt64]
        /// Publish → provider of each push in the latency phase, in ms.
        var latencies: [Double] = []
    }

    private let state: Mutex<State>
    let users: Int
    let endpointsPerUser: Int

    init(users: Int, endpointsPerUser: Int) {
        self.users = users
        self.endpointsPerUser = endpointsPerUser
        state = Mutex(
            State(
                tapsPerEndpoint: Array(repeating: 0, count: users * endpointsPerUser),
                sentAt: Array(repeating: 0, count: users)))
    }

    /// The emulator's `onRequest`: called on its event loops for every answered request.
    func record(_ request: APNSEmulator.Request) {
        let now = Monotonic.now()
        guard request.status == 200 else {
            let key = "\(request.status) \(request.reason ?? ""): \(request.note ?? "")"
            state.withLock { $0.refused[key, default: 0] += 1 }
            return
        }
        let parsed = PipelineToken.parse(request.deviceToken).flatMap {
            $0.user < users && $0.endpoint < endpointsPerUser ? $0 : nil
        }
        state.withLock { state in
            state.delivered += 1
            guard let parsed else {
                state.unattributed += 1
                return
            }
            state.tapsPerEndpoint[parsed.user * endpointsPerUser + parsed.endpoint] += 1
            let sent = state.sentAt[parsed.user]
            if sent != 0 && now >= sent { state.latencies.append(Double(now - sent) / 1_000_000) }
        }
    }

    /// Notes that the publish for `user` was due at `nanoseconds` (latency phase).
    func markSent(user: Int, at nanoseconds: UInt64) {
        state.withLock { $0.sentAt[user] = nanoseconds }
    }

    var delivered: Int { state.withLock { $0.delivered } }

    /// A copy of everything counted so far.
    var snapshot: State { state.withLock { $0 } }

    /// Starts counting afresh (between phases).
    func reset() {
        state.withLock { state in
            state.delivered = 0
            state.unattributed = 0
            state.refused = [:]
            for index in state.tapsPerEndpoint.indices { state.tapsPerEndpoint[index] = 0 }
            for index in state.sentAt.indices { state.sentAt[index] = 0 }
            state.latencies = []
        }
    }
}

/// The APNs transport alone against the emulator, configured as `hub serve` configures it
/// (`Transports+APNS.swift`: the defaults, both environments at the emulator), with no HTTP, store
/// or dispatcher: the rate the pipeline is divided by.
enum TransportAlone {
    struct Figures {
        var rate: Double
        var accepted: Int
        var seconds: Double
        /// CPU of the bench process (transport and emulator) per 1,000 notifications.
        var cpuPerThousand: Double
    }

    static func measure(
        emulator: APNSEmulator, key: APNSTestKey, seconds: Double, concurrency: Int
    ) async -> Figures {
        var configuration = APNSTransport.Configuration(
            productionHost: "127.0.0.1", developmentHost: "127.0.0.1", port: emulator.port,
            trustRoots: .pem(emulator.trustRootPEM))
        configuration.requestTimeout = .seconds(60)
        var logger = Logger(label: "bench.pipeline.transport")
        logger.logLevel = .warning
        let transport = APNSTransport(configuration: configuration, logger: logger)
        let delivery = APNSBench.delivery(credentials: key.credentials())
        // Opens the connection and warms up (the hub's transport is warm during the measurement too).
        _ = await send(through: transport, delivery: delivery, for: min(1, seconds / 5), concurrency: concurrency)
        let usage = ProcessUsage()
        let start = ContinuousClock.now
        let accepted = await send(through: transport, delivery: delivery, for: seconds, concurrency: concurrency)
        let elapsed = (ContinuousClock.now - start).seconds
        let cpu = usage.elapsedSelf
        await transport.shutdown()
        return Figures(
            rate: Double(accepted) / elapsed, accepted: accepted, seconds: elapsed,
            cpuPerThousand: accepted > 0 ? cpu * 1000 / Double(accepted) : .nan)
    }

    /// Sends with `concurrency` in flight until `seconds` have passed; returns how many were accepted.
    private static func send(
        through transport: APNSTransport, delivery: OutboundDelivery, for seconds: Double, concurrency: Int
    ) async -> Int {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        return await withTaskGroup(of: Int.self) { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask {
                    var accepted = 0
                    while ContinuousClock.now < deadline {
                        if await transport.send(delivery) == .accepted { accepted += 1 }
                    }
                    return accepted
                }
            }
            return await group.reduce(0, +)
        }
    }
}
