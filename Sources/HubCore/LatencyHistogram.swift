/// Publish → provider latencies counted in fixed, log-spaced millisecond buckets.
///
/// The bounds never change, so histograms recorded by different instances, minutes or hours add
/// up bucket by bucket (a store keeps one column per bucket and sums them), and percentiles over
/// any range come from the merged counts. A percentile is interpolated linearly inside the bucket
/// that holds its rank (as Prometheus' `histogram_quantile` does), so it is exact to the bucket's
/// width: with these bounds within a factor of 2–2.5.
///
/// ```swift
/// var histogram = LatencyHistogram()
/// histogram.record(milliseconds: 42)
/// histogram.percentile(0.99)  // 49.7: inside the bucket (20, 50]
/// ```
public struct LatencyHistogram: Sendable, Hashable, Codable {
    /// The buckets' inclusive upper bounds in milliseconds; one more bucket counts what is above
    /// the last (+inf).
    public static let bounds: [Int64] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000,
    ]

    /// How many buckets a histogram has: one per bound and the +inf bucket.
    public static let bucketCount = bounds.count + 1

    /// The count of each bucket, ``bucketCount`` of them; the last is +inf.
    public private(set) var counts: [Int64]

    /// An empty histogram.
    public init() {
        counts = Array(repeating: 0, count: Self.bucketCount)
    }

    /// A histogram with these bucket counts (as a store reads them back). Missing buckets count
    /// zero; extra ones are added to the +inf bucket.
    public init(counts: [Int64]) {
        var histogram = LatencyHistogram()
        for (index, count) in counts.enumerated() {
            histogram.counts[min(index, Self.bucketCount - 1)] += count
        }
        self = histogram
    }

    /// How many latencies were recorded.
    public var count: Int64 { counts.reduce(0, +) }

    /// The bucket a latency of `milliseconds` falls in (negative ones, from a clock step, in the first).
    public static func bucket(milliseconds: Int64) -> Int {
        bounds.firstIndex { milliseconds <= $0 } ?? bounds.count
    }

    /// Counts one latency.
    public mutating func record(milliseconds: Int64) {
        counts[Self.bucket(milliseconds: milliseconds)] += 1
    }

    /// Adds another histogram's counts to this one.
    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }

    /// The latency in milliseconds below which a fraction `quantile` (0…1) of the recorded ones
    /// lie, interpolated inside its bucket; `nil` when nothing was recorded. A rank in the +inf
    /// bucket answers the last bound (the histogram only knows "more than that").
    public func percentile(_ quantile: Double) -> Double? {
        let total = count
        guard total > 0 else { return nil }
        let rank = min(max(quantile, 0), 1) * Double(total)
        var below: Int64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            if Double(below + bucketCount) >= rank {
                guard index < Self.bounds.count else { return Double(Self.bounds[Self.bounds.count - 1]) }
                let lower = index == 0 ? 0 : Double(Self.bounds[index - 1])
                let upper = Double(Self.bounds[index])
                let within = max(rank - Double(below), 0) / Double(bucketCount)
                return lower + (upper - lower) * within
            }
            below += bucketCount
        }
        return Double(Self.bounds[Self.bounds.count - 1])
    }
}
