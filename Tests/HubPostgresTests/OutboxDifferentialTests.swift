import Foundation
import HubCore
import Testing

@testable import HubPostgres
@testable import HubSQLite

/// The outbox rules of both stores against the reference model (``OutboxReference``): random,
/// seeded sequences of registrations, publishes, claims, outcomes, lease releases, clock
/// advances and sweeps; after every step the outboxes, endpoints and feeds must be equal. A
/// failure is shrunk to a short sequence and recorded with its seed (`HUB_OUTBOX_SEED` replays
/// it; `HUB_OUTBOX_RUNS`, `HUB_OUTBOX_STEPS` run more).
///
/// Sequences are long enough to reach the states that take many steps to build (a publish split
/// by a hand-off, then released and claimed with rows of equal priority and due time: seed 169
/// needed 100 steps to show that the stores numbered such rows differently).
@Suite("Outbox differential")
struct OutboxDifferentialTests {
    @Test("SQLite's outbox follows the reference model (12,000 random steps)")
    func sqlite() async throws {
        try await OutboxDifferential.check(runs: 100, steps: 120) { [try DifferentialSide.sqlite()] }
    }

    @Test(
        "PostgreSQL's outbox follows the reference model, retention by partitions (6,000 random steps)",
        .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func postgres() async throws {
        // PostgreSQL retires finished rows by the expiry their notification had when they finished
        // (SQLite: while it lives), in partitions of a second: the test's times are whole seconds.
        try await PostgresTestDatabase.withStore(configure: PostgresTestDatabase.secondPartitions) { store in
            try await OutboxDifferential.check(runs: 50, steps: 120, firstSeed: 1_001) {
                [try await DifferentialSide.postgres(store)]
            }
        }
    }

    @Test("A store that breaks one rule fails the differential test, shrunk to a few steps")
    func catchesAndShrinks() async throws {
        // SQLite seen through a fault: a row claimed a second time shows one attempt too many.
        let faulty: () throws -> [DifferentialSide] = {
            let side = try DifferentialSide.sqlite()
            let read = side.readRows
            return [
                DifferentialSide(name: "faulty SQLite", store: side.store) {
                    try await read().map { row in
                        var row = row
                        if row.state.attempts >= 2 { row.state.attempts += 1 }
                        return row
                    }
                }
            ]
        }
        var found: OutboxDifferential.Failure?
        for seed in UInt64(1)...20 {
            found = try await OutboxDifferential.run(OutboxDifferential.generate(seed: seed, count: 60), sides: faulty)
            if found != nil { break }
        }
        let failure = try #require(found, "no sequence of 20 claimed a row twice")
        let shrunk = try await OutboxDifferential.shrink(failure, sides: faulty)
        // The least that shows it: register, publish, claim, let the lease end (or put the row
        // back), claim again.
        #expect(shrunk.steps.count <= 6, "\(shrunk)")
        #expect(shrunk.differences.contains { $0.contains("attempts=3") }, "\(shrunk)")
    }
}
