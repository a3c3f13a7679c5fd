import Foundation
public import HubCore
import Synchronization

extension TransportConformance {
    /// A shoulder tap (no notification attached) to a working endpoint is `accepted`.
    public static func shoulderTapIsAccepted(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        let endpoint = try await harness.workingEndpoint()
        let outcome = try await send(transport, delivery(.shoulderTap, to: endpoint, app: harness.app), harness, expect)
        try expect.equal(outcome, .accepted, "the outcome of a shoulder tap to a working endpoint")
    }

    /// A visible delivery, and a fallback one, with the notification to render are `accepted`.
    public static func visibleDeliveryIsAccepted(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        for (index, kind) in [DeliveryKind.visible, .fallback].enumerated() {
            let endpoint = try await harness.workingEndpoint()
            let outbound = delivery(kind, to: endpoint, app: harness.app, sequence: Int64(index + 1))
            let outcome = try await send(transport, outbound, harness, expect)
            try expect.equal(outcome, .accepted, "the outcome of a \(kind) delivery to a working endpoint")
        }
    }

    /// A delivery to an endpoint the provider reports gone is `endpointGone`, so the hub
    /// deactivates it instead of retrying forever. Skipped without ``TransportConformanceHarness/deadEndpoint``.
    public static func deadEndpointIsGone(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        guard let makeDead = harness.deadEndpoint else { return }
        let outcome = try await send(
            transport, delivery(.shoulderTap, to: try await makeDead(), app: harness.app),
            harness, expect)
        guard case .endpointGone = outcome else {
            throw expect.fail("a delivery to a dead endpoint must be endpointGone, got \(outcome)")
        }
    }

    /// ``TransportConformanceHarness/concurrentSends`` sends at once (the dispatcher sends
    /// concurrently) each return within the time limit, and none to a working endpoint is
    /// `endpointGone`, `rejected` or `suspended`.
    public static func concurrentSends(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        let endpoint = try await harness.workingEndpoint()
        let count = max(harness.concurrentSends, 2)
        let outcomes = try await withThrowingTaskGroup(of: DeliveryOutcome.self) { group in
            for index in 1...count {
                let outbound = delivery(.shoulderTap, to: endpoint, app: harness.app, sequence: Int64(index))
                group.addTask { try await send(transport, outbound, harness, expect) }
            }
            var outcomes: [DeliveryOutcome] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        try expect.equal(outcomes.count, count, "sends that returned")
        let bad = outcomes.filter {
            switch $0 {
            case .endpointGone, .rejected, .suspended: true
            case .accepted, .retry: false
            }
        }
        try expect.that(
            bad.isEmpty, "\(bad.count) of \(count) concurrent sends to a working endpoint failed: \(bad.prefix(3))")
        try expect.that(outcomes.contains(.accepted), "none of \(count) concurrent sends was accepted")
    }

    /// A send whose task is cancelled still returns within the time limit, and never reports a
    /// working endpoint `endpointGone` (that would deactivate a healthy device), `rejected` (that
    /// would drop the delivery) or `suspended` (that would park it until the hub restarts): the
    /// dispatcher cancels sends only when it stops, and such a send must be tried again.
    public static func cancelledSendReturns(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        let endpoint = try await harness.workingEndpoint()
        let outbound = delivery(.shoulderTap, to: endpoint, app: harness.app)
        let clock = ContinuousClock()
        let started = clock.now
        let task = Task { await transport.send(outbound) }
        task.cancel()
        let outcome = try await withinLimit(harness.sendTimeLimit, expect, "a cancelled send") { await task.value }
        switch outcome {
        case .endpointGone: throw expect.fail("a cancelled send reported a working endpoint gone: \(outcome)")
        case .rejected, .suspended: throw expect.fail("a cancelled send must be retried or accepted, got \(outcome)")
        case .accepted, .retry: break
        }
        try expect.that(clock.now - started <= harness.sendTimeLimit, "a cancelled send took \(clock.now - started)")
    }

    /// `problem(registering:for:)` answers for any endpoint — odd tokens, other platforms, no
    /// token — without trapping, and accepts the working endpoint.
    public static func registrationCheckIsTotal(
        _ transport: any Transport, _ harness: TransportConformanceHarness
    ) async throws {
        let expect = Expect()
        let working = try await harness.workingEndpoint()
        if let problem = transport.problem(registering: working, for: harness.app) {
            throw expect.fail("the working endpoint was refused at registration: \(problem)")
        }
        let tokens: [String?] = [
            nil, "", " ", "\0", "not a token", String(repeating: "f", count: 64), String(repeating: "é", count: 5000),
            "https://", "https://[::1]:99999/x", "💥", "0x", "ab cd", "\u{202E}gnp.exe",
        ]
        let platforms = [Platform.ios, .android, .windows, .web, Platform(rawValue: "")]
        let attributeSets: [[String: String]] = [
            [:], ["environment": "development"], ["environment": "mars"], ["": ""],
            ["x": String(repeating: "é", count: 300)],
        ]
        for token in tokens {
            for platform in platforms {
                for attributes in attributeSets {
                    var endpoint = working
                    endpoint.token = token
                    endpoint.platform = platform
                    endpoint.attributes = attributes
                    endpoint = transport.prepare(endpoint, for: harness.app)
                    _ = transport.problem(registering: endpoint, for: harness.app)
                }
            }
        }
        var empty = working
        empty.platformAppId = ""
        _ = transport.problem(registering: empty, for: CrossDeviceApp(id: "", name: ""))
    }

    // MARK: Helpers

    /// One send, which must return within the harness's time limit.
    static func send(
        _ transport: any Transport, _ outbound: OutboundDelivery, _ harness: TransportConformanceHarness,
        _ expect: Expect
    ) async throws -> DeliveryOutcome {
        try await withinLimit(harness.sendTimeLimit, expect, "a send to \(outbound.endpoint.id)") {
            await transport.send(outbound)
        }
    }

    /// The value of `operation`, or a failure when it takes longer than `limit`. A late operation
    /// is cancelled and left behind: the suite cannot stop a transport that ignores cancellation.
    static func withinLimit<Value: Sendable>(
        _ limit: Duration, _ expect: Expect, _ what: String,
        _ operation: @escaping @Sendable () async -> Value
    ) async throws -> Value {
        let race = Race<Value>()
        return try await withCheckedThrowingContinuation { continuation in
            race.start(continuation)
            let work = Task { race.finish(.success(await operation())) }
            let timer = Task {
                try? await Task.sleep(for: limit)
                if race.finish(.failure(expect.fail("\(what) did not return within \(limit)"))) { work.cancel() }
            }
            race.onFinish { timer.cancel() }
        }
    }
}

/// The first of an operation and a timer to finish resumes the continuation; the other is ignored.
private final class Race<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var finished = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Value, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Runs `cleanup` once the race is decided (at once if it is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state in
            if !state.finished { state.cleanup = cleanup }
            return state.finished
        }
        if finished { cleanup() }
    }

    /// Decides the race with `result` unless it is decided; returns whether this call decided it.
    @discardableResult
    func finish(_ result: Result<Value, any Error>) -> Bool {
        let (continuation, cleanup) = state.withLock {
            state -> (CheckedContinuation<Value, any Error>?, (@Sendable () -> Void)?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.cleanup = nil
            }
            return (state.continuation, state.cleanup)
        }
        guard let continuation else { return false }
        continuation.resume(with: result)
        cleanup?()
        return true
    }
}
