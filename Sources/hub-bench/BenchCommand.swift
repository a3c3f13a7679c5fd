import ArgumentParser
import Foundation
import HubCore

/// `hub-bench …`: benchmarks that print their figures. Build with `-c release` for numbers that count.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub-bench",
        abstract: "Measure the hub: durable publishes/s, publish-to-wake latency, transport throughput.",
        subcommands: [
            PublishBench.self, APNSBench.self, FCMBench.self, RSSBench.self, PipelineBench.self, PollingBench.self,
            BroadcastBench.self,
        ]
    )

    /// The PostgreSQL URL a benchmark uses: `--database-url`, else $HUB_DATABASE_URL, else
    /// $HUB_TEST_DATABASE_URL (set by scripts/with-postgres).
    static func databaseURL(option: String?) -> Secret? {
        if let option { return Secret(option, source: "--database-url") }
        let environment = ProcessInfo.processInfo.environment
        for name in ["HUB_DATABASE_URL", "HUB_TEST_DATABASE_URL"] {
            if let value = environment[name], !value.isEmpty { return Secret(value, source: "env:\(name)") }
        }
        return nil
    }

    /// The middle of `values` (the mean of the two middle ones for an even count); 0 when empty.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
