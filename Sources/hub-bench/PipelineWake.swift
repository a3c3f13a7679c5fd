import Foundation

extension PipelinePhases {
    /// Users, rate and seconds of the cross-instance wake phase.
    static let wakeUsers = 1000
    static let wakeRate = 100

    /// PostgreSQL with two instances: how long a device waiting on one instance takes to learn of
    /// a publish on the other. Two hubs in this process, each with its own pool, wake-up relay
    /// (LISTEN/NOTIFY) and signals, on a schema of their own on the same server; every user
    /// long-polls the instance its publishes do not go through (``PublishBenchmark``), publishes
    /// at ``wakeRate``/s, publish → the long-poll's answer.
    func crossInstanceWake(into figures: inout PipelineFigures) async throws {
        guard let url = options.url else { return }
        let users = Self.wakeUsers
        let rate = Self.wakeRate
        let seconds = max(5, options.latencySeconds)
        let result = try await PublishBench.onPostgres(url: url, instances: 2, poolSize: options.poolSize) {
            pairs, label in
            try await PublishBenchmark(instances: pairs, users: users, endpointsPerUser: 1, label: label)
                .run(publishes: 2 * users, concurrency: 16, rate: rate, seconds: seconds)
        }
        figures.wakeP50 = result.wakeP50
        figures.wakeP99 = result.wakeP99
        emit(
            String(
                format: "cross-instance wake at %d publishes/s (%d users, each long-polling the instance its "
                    + "publishes do not go through; two hubs in this process on a schema of their own on the same "
                    + "server): publish → wake p50 %.2f ms, p99 %.2f ms%@",
                rate, users, result.wakeP50, result.wakeP99, setup.targets.crossInstanceWake(result.wakeP99)))
    }
}
