import Foundation
import HubCore
import HubEmulators
import HubHTTP2
import HubTesting
import Testing

@testable import HubAPNS

@Suite("APNs connections: stream limits, GOAWAY, resets, timeouts, PINGs, TLS")
struct APNSConnectionTests {
    /// Sends to tokens `range` concurrently and returns the outcomes.
    private func burst(_ harness: APNSHarness, _ range: ClosedRange<Int>) async -> [DeliveryOutcome] {
        await withTaskGroup(of: DeliveryOutcome.self) { group in
            for index in range { group.addTask { await harness.send(APNSHarness.token(index)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// The connections to the production server now, as the credentials' HTTP/2 client has them.
    private func connections(_ harness: APNSHarness) -> [HTTP2ConnectionInfo] {
        let client = try? harness.transport.group(for: harness.credentials).get().client
        return client?.connections(to: harness.transport.configuration.production.origin) ?? []
    }

    @Test("a new connection starts at one stream and uses the raised limit after the first answer")
    func initialLimit() async throws {
        try await APNSHarness.with(emulator: { $0.maxConcurrentStreams = 1000 }) { harness in
            harness.emulator.setResponseDelay(.milliseconds(50))
            let outcomes = await burst(harness, 1...30)
            #expect(outcomes.allSatisfy { $0.isAccepted }, "\(outcomes.filter { !$0.isAccepted })")
            #expect(harness.emulator.statistics.connectionsAccepted == 1, "no connection storm while warming up")
            #expect((harness.emulator.maxConcurrentStreamsByConnection[1] ?? 0) > 1)
        }
    }

    @Test("with a lowered limit it never opens more streams than allowed and opens more connections")
    func loweredLimit() async throws {
        try await APNSHarness.with(
            emulator: { $0.maxConcurrentStreams = 2 }, transport: { $0.maxConnections = 4 }
        ) { harness in
            harness.emulator.setResponseDelay(.milliseconds(30))
            let outcomes = await burst(harness, 1...40)
            #expect(outcomes.allSatisfy { $0.isAccepted }, "\(outcomes.filter { !$0.isAccepted })")
            let perConnection = harness.emulator.maxConcurrentStreamsByConnection
            #expect(perConnection.values.allSatisfy { $0 <= 2 }, "\(perConnection)")
            #expect((2...4).contains(harness.emulator.statistics.connectionsAccepted))
        }
    }

    @Test("a limit lowered mid-connection is obeyed from the next stream on")
    func loweredMidConnection() async throws {
        try await APNSHarness.with(transport: { $0.maxConnections = 3 }) { harness in
            #expect(await harness.send(APNSHarness.token(0)) == .accepted)
            harness.emulator.setMaxConcurrentStreams(3)
            #expect(await eventually { connections(harness).first?.streamLimit == 3 })
            harness.emulator.setResponseDelay(.milliseconds(30))
            let outcomes = await burst(harness, 1...30)
            #expect(outcomes.allSatisfy { $0.isAccepted }, "\(outcomes.filter { !$0.isAccepted })")
            #expect(harness.emulator.maxConcurrentStreamsByConnection.values.allSatisfy { $0 <= 3 })
            #expect(harness.emulator.statistics.connectionsAccepted > 1)
        }
    }

    @Test("after GOAWAY in-flight requests finish, new ones go to a new connection, nothing is lost")
    func goAway() async throws {
        try await APNSHarness.with { harness in
            #expect(await harness.send(APNSHarness.token(0)) == .accepted)
            harness.emulator.setResponseDelay(.milliseconds(300))
            async let outcomes = burst(harness, 1...10)
            // GOAWAY once the server has read all ten: they are below its last stream ID.
            #expect(await eventually { harness.emulator.statistics.requests == 11 })
            harness.emulator.sendGoAway(reason: "Shutdown")
            harness.emulator.setResponseDelay(nil)
            let results = await outcomes
            #expect(results.allSatisfy { $0.isAccepted }, "\(results)")
            #expect(await harness.send(APNSHarness.token(11)) == .accepted)
            #expect(harness.emulator.statistics.connectionsAccepted == 2)
            #expect(harness.logs.count("GOAWAY", atLeast: .info) >= 1)
        }
    }

    @Test("after a connection reset in-flight sends answer retry and the next send reconnects")
    func reset() async throws {
        try await APNSHarness.with { harness in
            #expect(await harness.send(APNSHarness.token(0)) == .accepted)
            for index in 1...5 { harness.emulator.hold(token: APNSHarness.token(index)) }
            async let outcomes = burst(harness, 1...5)
            // Reset once the server has read all five, which it never answers.
            #expect(await eventually { harness.emulator.statistics.requests == 6 })
            harness.emulator.resetConnections()
            let results = await outcomes
            #expect(results.count == 5 && results.allSatisfy { $0.isRetry }, "\(results)")
            let next = await harness.send(APNSHarness.token(6))
            #expect(next == .accepted, "\(next)")
            #expect(harness.emulator.statistics.connectionsAccepted == 2)
        }
    }

    @Test("a request without an answer times out as retry; the connection keeps serving others")
    func timeout() async throws {
        try await APNSHarness.with(
            emulator: { $0.initialMaxConcurrentStreams = 1000 }, transport: { $0.requestTimeout = .seconds(3) }
        ) { harness in
            harness.emulator.hold(token: APNSHarness.token(1))
            let started = ContinuousClock.now
            let outcome = await harness.send(APNSHarness.token(1))
            #expect(outcome.isRetry && outcome.reasonText.contains("timeout"), "\(outcome)")
            #expect(ContinuousClock.now - started < .seconds(15), "the timeout ends the wait")
            let next = await harness.send(APNSHarness.token(2))
            #expect(next == .accepted, "\(next) \(harness.emulator.requests.map { "\($0.status) \($0.reason ?? "")" })")
            #expect(harness.emulator.statistics.connectionsAccepted == 1)
        }
    }

    @Test("idle connections are PINGed; a PING without answer closes the connection and the next send reconnects")
    func pings() async throws {
        try await APNSHarness.with(transport: {
            $0.pingInterval = .milliseconds(100)
            $0.pingTimeout = .seconds(1)
        }) { harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            #expect(await eventually { harness.emulator.statistics.pingsReceived >= 2 })
            #expect(connections(harness).count == 1, "answered PINGs keep the connection: \(harness.logs.all)")
            harness.emulator.stallConnections()
            #expect(await eventually { connections(harness).allSatisfy(\.isRetired) })
            let next = await harness.send(APNSHarness.token(2))
            #expect(next == .accepted, "\(next) \(harness.logs.all)")
            #expect(harness.emulator.statistics.connectionsAccepted == 2)
        }
    }

    @Test("an untrusted server certificate fails the connection: retry, one warning, fast failures after")
    func untrustedServer() async throws {
        let stranger = try TestCertificateAuthority(commonName: "Somebody else")
        try await APNSHarness.with(transport: { $0.trustRoots = .pem(stranger.certificatePEM) }) { harness in
            let first = await harness.send(APNSHarness.token(1))
            #expect(first.isRetry && first.reasonText.contains("connect"), "\(first)")
            let second = await harness.send(APNSHarness.token(2))
            #expect(second.isRetry && second.retryAfter != nil, "backing off: \(second)")
            #expect(harness.logs.count("cannot connect") == 1)
            #expect(harness.emulator.requests.isEmpty)
        }
    }

    @Test("a server that does not listen answers retry quickly")
    func nothingListening() async throws {
        try await APNSHarness.with(transport: { $0.production = .init(host: "127.0.0.1", port: 1) }) { harness in
            let started = ContinuousClock.now
            #expect(await harness.send(APNSHarness.token(1)).isRetry)
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    @Test("answer bodies past the connection's 64 KiB flow-control window keep coming: credit is returned")
    func connectionWindow() async throws {
        // Every 410 answer carries a JSON body (~50 bytes); 1,500 of them are ~75 KB, more than the
        // connection-level window HTTP/2 starts with. Without WINDOW_UPDATEs the server stalls.
        try await APNSHarness.with(transport: { $0.maxConnections = 1 }) { harness in
            let token = APNSHarness.token(7)
            harness.emulator.markUnregistered(token: token, at: Date(timeIntervalSince1970: 1_700_000_000))
            let others = await withTaskGroup(of: [DeliveryOutcome].self) { group in
                for worker in 0..<32 {
                    group.addTask { await unregisteredAnswers(harness, token: token, worker: worker) }
                }
                var others: [DeliveryOutcome] = []
                for await outcomes in group { others.append(contentsOf: outcomes) }
                return others
            }
            let firstOthers = others.prefix(3).map { "\($0)" }.joined(separator: "; ")
            #expect(others.isEmpty, "every answer is 410 Unregistered: \(firstOthers)")
            #expect(harness.emulator.statistics.connectionsAccepted == 1)
        }
    }

    /// Sends to `token` every 32nd of 1,500 times, from `worker` on; returns what was not endpointGone.
    private func unregisteredAnswers(_ harness: APNSHarness, token: String, worker: Int) async -> [DeliveryOutcome] {
        var others: [DeliveryOutcome] = []
        for _ in stride(from: worker, to: 1_500, by: 32) {
            let outcome = await harness.send(token)
            if case .endpointGone = outcome { continue }
            others.append(outcome)
        }
        return others
    }

    @Test("shutdown fails later sends with retry")
    func shutdown() async throws {
        try await APNSHarness.with { harness in
            #expect(await harness.send(APNSHarness.token(1)) == .accepted)
            await harness.transport.shutdown(grace: .milliseconds(100))
            #expect(await harness.send(APNSHarness.token(2)).isRetry)
        }
    }
}
