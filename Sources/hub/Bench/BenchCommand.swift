import ArgumentParser

/// `hub bench …`: benchmarks that print their figures. Build with `-c release` for numbers that count.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the hub: durable publishes/s, publish-to-wake latency, transport throughput.",
        subcommands: [PublishBench.self, APNSBench.self, FCMBench.self, RSSBench.self]
    )
}
