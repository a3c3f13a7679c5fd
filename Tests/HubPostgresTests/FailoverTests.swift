import Foundation
import HubCore
import HubPolling
import HubTesting
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HubPostgres

/// Issue 39, point 1: the primary goes away for good and its synchronous standby takes over. The
/// test starts its own pair of PostgreSQL servers (`scripts/postgres-failover-pair`), runs two
/// hubs on the multi-host URL under a publish load, SIGKILLs the primary and promotes the standby.
@Suite("PostgreSQL failover", .enabled(if: FailoverPair.isEnabled, FailoverPair.skipReason), .serialized)
struct FailoverTests {
    @Test("Two instances follow a failover to the standby: nothing acknowledged is lost, both resume")
    func failoverUnderLoad() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "hub-failover-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pair = FailoverPair(folder: folder)
        // Both servers are stopped at the end, also when the test fails.
        let outcome = await Result {
            let (primary, standby, password) = try await pair.start()
            let url =
                "postgres://hub:\(password)@127.0.0.1:\(primary),127.0.0.1:\(standby)/hub_test"
                + "?sslmode=disable&target_session_attrs=read-write"
            try await failoverUnderLoad(url: url, pair: pair)
        }
        _ = try? await pair.run("stop")
        try outcome.get()
    }

    func failoverUnderLoad(url: String, pair: FailoverPair) async throws {
        let schema = PostgresTestDatabase.freshSchema()
        let log = SendLog()
        var dispatcher = DispatcherConfiguration()
        dispatcher.idleInterval = .milliseconds(200)
        dispatcher.maxStoreBackoff = .seconds(1)
        dispatcher.concurrency = 16
        let a = try HubInstance(
            "a", schema: schema, dispatcher: dispatcher, server: .pair(url: url), apns: log.transport("a"))
        let b = try HubInstance(
            "b", schema: schema, dispatcher: dispatcher, server: .pair(url: url), apns: log.transport("b"))
        #expect(a.store.configuration.hosts.count == 2)
        try await a.store.migrate()
        let services = HubRunner([a.store, b.store, a.hub, b.hub])
        let outcome = await Result { try await failover(a, b, log, pair) }
        #expect(await services.stop(), "graceful shutdown did not finish within 30 s")
        try outcome.get()
    }

    func failover(_ a: HubInstance, _ b: HubInstance, _ log: SendLog, _ pair: FailoverPair) async throws {
        let users = (1...8).map { "user\($0)" }
        var endpoints: [String: [String]] = [:]
        for user in users {
            for (index, instance) in [a, b].enumerated() {
                try await instance.register("e\(index)", user: user)
                endpoints[user, default: []].append("e\(index)")
            }
        }
        for store in [a.store, b.store] {
            #expect(await eventually { (try? await store.wakeConnectionCount()) == 1 }, "wake-up relay listening")
            #expect(await eventually { store.relayPeerCount == 1 }, "wake-up relay knows the other instance")
        }

        let load = PublishLoad()
        defer { load.stop() }
        let publishers = Task {
            await withTaskGroup(of: Void.self) { group in
                for publisher in 0..<4 {
                    group.addTask { await load.publish(through: publisher % 2 == 0 ? a : b, as: publisher, to: users) }
                }
            }
        }
        // Real time on purpose: 2 s of load on the primary before it is killed.
        try await Task.sleep(for: .seconds(2))
        #expect(log.count > 0, "deliveries flow before the failover")
        let acknowledgedBefore = load.acknowledged.count

        // The primary dies for good.
        try await pair.run("kill-primary")
        let killedAt = ContinuousClock.now
        // No primary: readiness fails, quickly, on both; publishes are refused as unavailable (503).
        for instance in [a, b] {
            let probe = ContinuousClock.now
            let error = await #expect(throws: HubError.self) { try await instance.hub.checkReadiness() }
            #expect(error?.code == .unavailable)
            #expect(ContinuousClock.now - probe < .seconds(3), "readiness took \(ContinuousClock.now - probe)")
        }
        let refused = await #expect(throws: HubError.self) { try await a.publish("during-outage", user: "user1") }
        #expect(refused?.code == .unavailable)
        let refusal = refused.map { "\($0)" } ?? ""
        let password = a.store.configuration.password?.reveal() ?? "-"
        #expect(refusal.contains("standby") && !refusal.contains(password), "\(refusal)")
        // Real time on purpose: the database is down for 2 s for real, under load.
        try await Task.sleep(until: killedAt + .seconds(2))

        try await pair.run("promote")
        let promotedAt = ContinuousClock.now
        for instance in [a, b] {
            #expect(
                await eventually(timeout: .seconds(10)) { (try? await instance.hub.checkReadiness()) != nil },
                "\(instance.name) ready within 10 s of the promotion")
        }
        // Real time on purpose: 6 s of load against the promoted primary, then stop.
        try await Task.sleep(for: .seconds(6))
        load.stop()
        _ = try await withDeadline(.seconds(30), "publishers") { await publishers.value }

        let acknowledged = load.acknowledged
        let endpointsByUser = endpoints
        #expect(acknowledged.count > acknowledgedBefore + 50, "publishes acknowledged after the promotion")
        let delivered = await eventually(timeout: .seconds(60)) {
            log.missing(acknowledged, endpoints: endpointsByUser).isEmpty
        }
        let missing = log.missing(acknowledged, endpoints: endpointsByUser)
        #expect(delivered, "\(missing.count) deliveries of acknowledged publishes never sent: \(missing.prefix(10))")
        // Refused publishes were refused as unavailable (503 with Retry-After), none hung.
        #expect(load.failures.allSatisfy { $0 == "unavailable" }, "\(Set(load.failures))")
        #expect(load.slowest < .seconds(8), "a publish took \(load.slowest): requests must always be answered")
        var resumed: [String: Duration] = [:]
        for name in ["a", "b"] {
            let first = log.all.first { $0.instance == name && $0.at > promotedAt }?.at
            resumed[name] = first.map { $0 - promotedAt }
            #expect(
                first.map { $0 - promotedAt < .seconds(10) } ?? false,
                "dispatcher \(name) resumed: \(first.map { $0 - promotedAt } ?? .zero)")
        }

        // Wake-ups cross instances again, through the new primary: an anonymous long-poll on B
        // (no endpoint, so no delivery of B's own can wake it) is woken by a publish through A.
        for store in [a.store, b.store] {
            #expect(
                await eventually(timeout: .seconds(20)) { (try? await store.wakeConnectionCount()) == 1 },
                "wake-up relay reconnected")
            #expect(await eventually { store.relayPeerCount == 1 }, "wake-up relay knows the other instance")
        }
        let before = try await b.hub.feed(app: HubInstance.app.id, user: "watcher", after: 0).version
        async let page = b.hub.longPoll(app: HubInstance.app.id, user: "watcher", after: before, wait: .seconds(30))
        #expect(await eventually { b.signals.waiterCount == 1 })
        let wakeStart = ContinuousClock.now
        let published = try await a.publish("after-failover", user: "watcher")
        let woken = try await page
        let wakeLatency = ContinuousClock.now - wakeStart
        #expect(woken.changes.map(\.id) == [published.id])
        #expect(wakeLatency < .seconds(5), "publish-to-wake across instances took \(wakeLatency)")
        #expect(await eventually(timeout: .seconds(30)) { (try? await a.store.deliveryStatistics().pending) == 0 })
        print(
            """
            failover under load: \(acknowledged.count) publishes acknowledged (\(acknowledgedBefore) before the kill), \
            \(load.failures.count) refused (\(Set(load.failures).sorted())); \(log.count) sends; dispatchers resumed \
            \(resumed) after the promotion; slowest publish \(load.slowest); wake across instances \(wakeLatency)
            """)
    }
}

/// The primary and standby of `scripts/postgres-failover-pair`, in a folder of the test's.
struct FailoverPair: Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "scripts/postgres-failover-pair")
    /// Runs next to `scripts/with-postgres` (which exports the server binaries' folder), and always in CI.
    static let isEnabled = ProcessInfo.processInfo.environment["HUB_TEST_PGBIN"] != nil || PostgresTestDatabase.isCI
    static let skipReason: Comment = "HUB_TEST_PGBIN is not set: run scripts/test, or scripts/with-postgres swift test"

    let folder: URL

    /// Starts both servers. - Returns: their ports and the password of user `hub`.
    func start() async throws -> (primary: Int, standby: Int, password: String) {
        let words = try await run("start").split(separator: " ").map(String.init)
        guard words.count == 3, let primary = Int(words[0]), let standby = Int(words[1]) else {
            throw PostgresStoreError(.server, "postgres-failover-pair start printed \(words.count) words, not 3")
        }
        return (primary, standby, words[2])
    }

    /// Runs the script's `action` on the pair; returns what it printed.
    @discardableResult
    func run(_ action: String) async throws -> String {
        let process = Process()
        process.executableURL = Self.script
        process.arguments = [action, folder.path]
        let output = Pipe()
        process.standardOutput = output
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard status == 0 else {
            throw PostgresStoreError(.server, "postgres-failover-pair \(action) exited with \(status)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
