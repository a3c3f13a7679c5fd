import Foundation
import HubCore
import Hummingbird

/// `/console/apps/{app}/statistics?range=1h|24h|7d|30d` (or `from` and `to`, UTC, a custom range of
/// up to 30 days): the app's statistics over time from the store
/// (``Hub/statistics(app:resolution:from:to:)``), per minute up to a day within the last 24 hours,
/// else per hour, drawn as SVG line charts — publishes and deliveries, failures, publish →
/// provider latency — with the numbers per transport in a table.
extension Console {
    /// The ranges the page offers: per minute for up to a day, per hour for up to 30 days.
    enum StatisticsRange: String, CaseIterable, Sendable {
        case hour = "1h"
        case day = "24h"
        case week = "7d"
        case month = "30d"

        var seconds: TimeInterval {
            switch self {
            case .hour: 3_600
            case .day: 86_400
            case .week: 7 * 86_400
            case .month: 30 * 86_400
            }
        }
        var resolution: StatisticsResolution { self == .hour || self == .day ? .minute : .hour }
        var title: String {
            switch self {
            case .hour: "Last hour"
            case .day: "Last 24 hours"
            case .week: "Last 7 days"
            case .month: "Last 30 days"
            }
        }
    }

    func addStatisticsPage(to router: RouterGroup<HubRequestContext>) {
        page(router, "apps/:app/statistics") { request, context, _ in
            let app = try hub.app(try context.pathParameter("app"))
            var query = ConsoleQuery(request)
            let range = query.text("range").flatMap { StatisticsRange(rawValue: $0) } ?? .hour
            let now = hub.now()
            let custom = query.text("from") != nil || query.text("to") != nil
            var from = query.time("from") ?? now.addingTimeInterval(-range.seconds)
            var to = query.time("to") ?? now
            if custom, query.errors.isEmpty {
                if from >= to {
                    query.fail("to", "must be after from")
                } else if to.timeIntervalSince(from) > StatisticsRange.month.seconds {
                    query.fail("from", "a range covers at most 30 days")
                } else if from < now.addingTimeInterval(-StatisticsResolution.hour.retention.seconds) {
                    query.fail("from", "statistics are kept 30 days")
                }
            }
            if !query.errors.isEmpty || !custom { (from, to) = (now.addingTimeInterval(-range.seconds), now) }
            // Minutes while they are kept (24 hours back) and the range spans a day at most; else hours.
            let minutes =
                to.timeIntervalSince(from) <= StatisticsRange.day.seconds
                && from >= now.addingTimeInterval(-StatisticsResolution.minute.retention.seconds)
            let header = Self.rangePicker(
                app: app.id, page: "statistics", range: range, custom: custom, query: query, from: from, to: to)
            guard query.errors.isEmpty else {
                return ConsoleView(
                    title: "Statistics", section: "statistics", app: app, status: .badRequest,
                    content: "\(query.notice)\n\(header)")
            }
            let report = try await hub.statistics(
                app: app.id, resolution: minutes ? .minute : .hour, from: from, to: to)
            let title: String =
                custom
                ? "\(ConsoleQuery.fieldValue(from).replacingOccurrences(of: "T", with: " ")) to "
                    + "\(ConsoleQuery.fieldValue(to).replacingOccurrences(of: "T", with: " ")) UTC"
                : range.title
            return ConsoleView(
                title: "Statistics", section: "statistics", app: app,
                content: """
                    \(header)
                    \(Self.charts(report, title: title, now: now))
                    \(Self.totals(report))
                    """)
        }
    }

    /// The bucket starts of the whole range, so that quiet buckets draw as zero.
    static func bucketStarts(_ report: StatisticsReport) -> [Date] {
        let step = TimeInterval(report.resolution.seconds)
        var starts: [Date] = []
        var start = report.resolution.start(of: report.from)
        while start < report.to {
            starts.append(start)
            start = start.addingTimeInterval(step)
        }
        return starts
    }

    /// The charts of `report`; the bucket still running at `now` is left out (its counts are
    /// partial: drawn, it would look like a drop).
    private static func charts(_ report: StatisticsReport, title: String, now: Date) -> HTML {
        let step = TimeInterval(report.resolution.seconds)
        let starts = bucketStarts(report)
        let byStart = Dictionary(report.buckets.map { ($0.start, $0.counts) }, uniquingKeysWith: { first, _ in first })
        func series(_ value: (StatisticsCounts) -> Double?) -> [Double?] {
            starts.map { start in
                start.addingTimeInterval(step) > now ? nil : byStart[start].map(value) ?? 0
            }
        }
        /// A line of `value` per bucket; the bucket still running is its value so far, not drawn.
        func line(_ name: String, _ colour: String, _ value: (StatisticsCounts) -> Double) -> ConsoleChart.Series {
            var line = ConsoleChart.Series(name: name, colour: colour, values: series(value))
            if let last = starts.last, last.addingTimeInterval(step) > now {
                line.running = byStart[last].map(value) ?? 0
            }
            return line
        }
        let unit = report.resolution == .minute ? "minute" : "hour"
        let volume = ConsoleChart.lines(
            id: "volume", title: "Publishes and deliveries per \(unit)",
            description:
                "\(title): \(report.total.published) publishes, \(report.total.delivered) deliveries taken by providers, "
                + "\(report.total.retried) retries.",
            times: starts,
            series: [
                line("Delivered", "#15803d") { Double($0.delivered) },
                line("Retried", "#b45309") { Double($0.retried) },
                // Last, so that it is drawn on top of a line with the same values.
                line("Published", "#1d4ed8") { Double($0.published) },
            ])
        let failedTotal = report.total.failed.values.reduce(0, +)
        let failures = ConsoleChart.lines(
            id: "failures", title: "Failures per \(unit)",
            description: "\(title): \(failedTotal) failed, \(report.total.gone) endpoints gone.",
            times: starts,
            series: [
                line("Failed", "#b42318") { Double($0.failed.values.reduce(0, +)) },
                line("Endpoints gone", "#6941c6") { Double($0.gone) },
            ])
        let latency = ConsoleChart.lines(
            id: "latency", title: "Publish → provider latency (ms)",
            description:
                "\(title): p50 \(milliseconds(report.total.latency.percentile(0.5))), "
                + "p99 \(milliseconds(report.total.latency.percentile(0.99))).",
            times: starts,
            series: [
                .init(
                    name: "p50", colour: "#1d4ed8", values: starts.map { byStart[$0]?.latency.percentile(0.5) },
                    joinsGaps: true),
                .init(
                    name: "p99", colour: "#b42318", values: starts.map { byStart[$0]?.latency.percentile(0.99) },
                    joinsGaps: true),
            ], unit: "ms", counts: false)
        return """
            <section aria-labelledby="charts"><h2 id="charts">\(title)</h2>\
            <div class="charts">\(volume)\(failures)\(latency)</div></section>
            """
    }

    private static func totals(_ report: StatisticsReport) -> HTML {
        let rows = report.transports.map { transport -> HTML in
            let counts = transport.total
            let failed = counts.failed.sorted { $0.value > $1.value }.map { "\($0.key) × \($0.value)" }
            return """
                <tr><th scope="row">\(transport.transport)</th><td>\(counts.delivered)</td><td>\(counts.retried)</td>\
                <td>\(counts.gone)</td><td>\(failed.isEmpty ? "—" : failed.joined(separator: ", "))</td>\
                <td>\(milliseconds(counts.latency.percentile(0.5)))</td>\
                <td>\(milliseconds(counts.latency.percentile(0.9)))</td>\
                <td>\(milliseconds(counts.latency.percentile(0.99)))</td>\
                <td>\(transport.endpoints.active)</td><td>\(transport.endpoints.inactive)</td></tr>
                """
        }
        let table =
            rows.isEmpty
            ? HTML("<p>Nothing was published or sent in this range, and the app has no endpoints.</p>")
            : ConsoleLayout.table(
                caption: "Per transport (published in the range: \(report.total.published))",
                headers: [
                    "Transport", "Delivered", "Retried", "Gone", "Failed by reason", "p50 ms", "p90 ms", "p99 ms",
                    "Active endpoints", "Inactive endpoints",
                ], rows: rows)
        return "<section aria-labelledby=\"numbers\"><h2 id=\"numbers\">Numbers</h2>\(table)</section>"
    }

    private static func milliseconds(_ value: Double?) -> String {
        value.map { ConsoleChart.format($0.rounded()) } ?? "—"
    }
}
