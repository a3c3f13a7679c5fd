import Foundation

/// The figures of one `hub-bench pipeline` configuration.
struct PipelineFigures: Sendable {
    var setup: PipelineSetup
    var transportRate = Double.nan
    var acceptedPerSecond = Double.nan
    /// `GET /healthz` answered per second over the same connections (the HTTP ceiling).
    var httpCeiling = Double.nan
    /// Pushes at the emulator per second during the throughput phase.
    var deliveriesPerSecond = Double.nan
    /// Pushes during the load ÷ (publishes accepted during the load × endpoints per user).
    var deliveredInWindowShare = Double.nan
    /// All pushes of the phase (load and drain) ÷ (accepted publishes × endpoints per user).
    var deliveredShare = Double.nan
    var usersPublished = 0
    /// Users published to whose every endpoint got at least one push.
    var usersServed = 0
    var cpuPerThousandDeliveries = Double.nan
    var ratio = Double.nan
    var latencyP50 = Double.nan
    var latencyP99 = Double.nan
    var cpuPerThousandPublishes = Double.nan
    /// Hub CPU per 1,000 `GET /healthz` at the latency phase's rate (the HTTP floor).
    var cpuPerThousandProbes = Double.nan
    /// PostgreSQL with two instances: publish on one → a long-poll on the other answers (ms).
    var wakeP50 = Double.nan
    var wakeP99 = Double.nan
    /// PostgreSQL: the server's CPU-s, the hubs' round trips and the WAL bytes per 1,000
    /// deliveries of the throughput phase.
    var serverCPUPerThousandDeliveries = Double.nan
    var roundTripsPerThousandDeliveries = Double.nan
    var walBytesPerThousandDeliveries = Double.nan

    init(setup: PipelineSetup) { self.setup = setup }

    /// One line per configuration, after every configuration ran.
    static func printSummary(_ results: [PipelineFigures]) {
        func cell(_ text: String, _ width: Int) -> String {
            "  " + String(repeating: " ", count: max(0, width - text.count)) + text
        }
        func number(_ value: Double, _ format: String) -> String { value.isNaN ? "-" : String(format: format, value) }
        emit("\nsummary")
        let header: [(String, Int)] = [
            ("publishes/s", 11), ("÷ HTTP", 6), ("deliveries/s", 12), ("in-run", 6), ("users", 5), ("CPU-s/1k del", 12),
            ("÷ transport", 11), ("p50 ms", 8), ("p99 ms", 8), ("CPU-s/1k pub", 12), ("wake p99", 8),
            ("PG CPU-s/1k del", 15), ("PG trips/1k", 11), ("PG WAL KB/1k", 12),
        ]
        let labelWidth = results.map(\.setup.label.count).max() ?? 0
        emit(String(repeating: " ", count: labelWidth) + header.map { cell($0.0, $0.1) }.joined())
        for figures in results {
            let users = figures.usersServed == figures.usersPublished ? "all" : "\(figures.usersServed)"
            let cells = [
                number(figures.acceptedPerSecond, "%.0f"),
                number(figures.acceptedPerSecond / figures.httpCeiling, "%.2f"),
                number(figures.deliveriesPerSecond, "%.0f"),
                number(figures.deliveredInWindowShare * 100, "%.1f%%"), users,
                number(figures.cpuPerThousandDeliveries, "%.3f"), number(figures.ratio, "%.2f"),
                number(figures.latencyP50, "%.2f"), number(figures.latencyP99, "%.2f"),
                number(figures.cpuPerThousandPublishes, "%.3f"), number(figures.wakeP99, "%.2f"),
                number(figures.serverCPUPerThousandDeliveries, "%.3f"),
                number(figures.roundTripsPerThousandDeliveries, "%.0f"),
                number(figures.walBytesPerThousandDeliveries / 1024, "%.0f"),
            ]
            emit(
                figures.setup.label + String(repeating: " ", count: labelWidth - figures.setup.label.count)
                    + zip(cells, header).map { cell($0, $1.1) }.joined())
        }
    }
}

/// Issue 13's targets (release build, 2 cores) that apply to a configuration, as text to print
/// next to a figure: ` — target ≥ 10,000/s: met`, or nothing where no target applies.
struct PipelineTargets {
    let setup: PipelineSetup

    private var oneEndpoint: Bool { setup.endpointsPerUser == 1 }
    private var crossInstance: Bool { setup.store == "postgres" && setup.instances == 2 }

    private func verdict(_ target: String, _ met: Bool) -> String { " — target \(target): \(met ? "met" : "MISSED")" }

    /// SQLite, 1 endpoint per user: ≥ 10,000 durable publishes/s accepted over HTTP.
    func acceptedPerSecond(_ value: Double) -> String {
        setup.store == "sqlite" && oneEndpoint ? verdict("≥ 10,000/s", value >= 10_000) : ""
    }

    /// 1 endpoint per user: deliveries keep pace, ≥ 95% during the load.
    func deliveredInWindow(_ share: Double) -> String {
        oneEndpoint ? verdict("≥ 95% during the load", share >= 0.95) : ""
    }

    /// 100 endpoints per user: ≥ 20,000 deliveries/s; PostgreSQL with two instances: ≥ 3,000/s.
    func deliveriesPerSecond(_ value: Double) -> String {
        if setup.endpointsPerUser >= 100 { return verdict("≥ 20,000 deliveries/s", value >= 20_000) }
        return crossInstance ? verdict("≥ 3,000 deliveries/s", value >= 3_000) : ""
    }

    /// Every configuration: no distinct users' taps merged.
    func distinctUsers(served: Int, published: Int) -> String {
        verdict("every user published to is tapped", served == published && published > 0)
    }

    /// 100 endpoints per user: pipeline ÷ transport ≥ 0.5.
    func ratio(_ value: Double) -> String {
        setup.endpointsPerUser >= 100 ? verdict("≥ 0.5", value >= 0.5) : ""
    }

    /// 1 endpoint per user, one instance, at 1,000 publishes/s: p99 ≤ 10 ms.
    func latencyP99(_ value: Double) -> String {
        oneEndpoint && setup.instances == 1 ? verdict("p99 ≤ 10 ms at 1,000 publishes/s", value <= 10) : ""
    }

    /// PostgreSQL, two instances: cross-instance wake p99 ≤ 20 ms.
    func crossInstanceWake(_ value: Double) -> String {
        crossInstance ? verdict("cross-instance wake p99 ≤ 20 ms", value <= 20) : ""
    }

    /// 1 endpoint per user, one instance, at 1,000 publishes/s: ≤ 0.3 CPU-s per 1,000 publishes.
    func cpuPerThousandPublishes(_ value: Double) -> String {
        oneEndpoint && setup.instances == 1 ? verdict("≤ 0.3 at 1,000 publishes/s", value <= 0.3) : ""
    }
}
