public import HubCore

/// Waits until `condition` holds, checking it every 10 ms, for at most `timeout` of real time.
///
/// The one way tests wait for background work they cannot await (a delivery recorded, a server
/// that logged its start): it returns as soon as the condition holds, so a generous `timeout` costs
/// a passing test nothing and keeps a loaded machine from failing it. For time the code under test
/// measures itself (retries, timeouts, leases, schedules), inject a ``ManualClock`` and advance it
/// instead of waiting.
/// - Returns: whether it held.
public func eventually(
    timeout: Duration = .seconds(20), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

extension Hub {
    /// Waits until the outbox holds nothing pending: every delivery's outcome is written, so
    /// nothing more goes out until something changes. What a test checks to see that no further
    /// send comes, instead of sleeping and hoping.
    /// - Returns: whether it settled within `timeout`.
    public func settled(timeout: Duration = .seconds(20)) async -> Bool {
        await eventually(timeout: timeout) { (try? await deliveryStatistics().pending) == 0 }
    }
}
