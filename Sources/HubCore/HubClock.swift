public import Foundation

/// Where the hub reads the time and waits: one clock for the monotonic instants of deadlines,
/// pauses and sleeps, and the wall-clock dates it stores and sends.
///
/// Everything that waits or reads the time takes one: ``Hub`` (its sweeper and statistics
/// flushes), the dispatcher (idle pauses, leases, back-offs, outcome batching), the polling plugin's `FeedSignals`
/// (long-poll and event stream deadlines) and the server's rate limits. Transports and their token
/// caches take the hub's ``date`` through ``TransportContext/clock``; the PostgreSQL store takes the
/// clock in its configuration (its own timestamps, its relay's and statistics' pauses).
/// ``SystemClock`` is the real one. A test injects a manual clock (HubTesting's `ManualClock`) and
/// moves it forward instead of sleeping, so a timeout fires when the test says, never because the
/// machine was busy.
///
/// Instants are `ContinuousClock` instants, so a manual clock's instants compare and subtract like
/// the system's: a manual clock is the system's start instant plus the time it was advanced.
///
/// The hub's store-call deadlines (``HubConfiguration/storeTimeout``) stay on the system clock: they
/// guard against a store that hangs in real time, and a test that moves its clock by minutes must
/// not fail the store calls in flight.
public protocol HubClock: Clock, Sendable where Instant == ContinuousClock.Instant {
    /// The wall-clock time: the timestamps the hub stores and puts on the wire.
    var date: Date { get }
}

/// The real clock: `ContinuousClock` for instants and sleeps, `Date()` for dates.
public struct SystemClock: HubClock {
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    public var date: Date { Date() }

    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
    }
}
