import Foundation

/// Line charts drawn by the hub as inline SVG: no script, no style attributes (the console's
/// Content-Security-Policy allows neither inline), colours as SVG presentation attributes.
///
/// Read at a glance: the title and legend above the plot; whole-number ticks for counts; every
/// point a marker whose tooltip (an SVG `title`, shown by the browser on hover) says its time,
/// series and value, and the values in a table under the chart too; a bucket without a value
/// (the current, unfinished minute; a minute without deliveries for latency) is left out, never
/// drawn as a drop to zero. Each chart is an image with a title and a description for screen readers.
enum ConsoleChart {
    /// One line: a name for the legend, a colour, and a value per point (`nil`: no value there).
    struct Series: Sendable {
        var name: String
        var colour: String
        var values: [Double?]
        /// Joins the points on either side of a `nil` (latency: a minute without deliveries has
        /// no latency, but the line goes on); otherwise a `nil` breaks the line.
        var joinsGaps = false
        /// The value so far of the last bucket, still running: not drawn (partial, it would look
        /// like a drop), shown in the values table as "so far".
        var running: Double? = nil
    }

    static let width = 640.0
    static let height = 240.0
    static let margin = (left: 52.0, right: 16.0, top: 12.0, bottom: 28.0)

    /// A chart of `series` over the points labelled by `times` (equally spaced), with a y axis
    /// from 0; `unit` follows values in tooltips (`ms`); `counts`: whole-number ticks.
    static func lines(
        id: String, title: String, description: String, times: [Date], series: [Series], unit: String = "",
        counts: Bool = true
    ) -> HTML {
        let plotWidth = width - margin.left - margin.right
        let plotHeight = height - margin.top - margin.bottom
        let peak = series.flatMap { $0.values.compactMap(\.self) }.max() ?? 0
        let ticks = Self.ticks(peak: peak, counts: counts)
        let top = ticks.last ?? 1
        let count = max(times.count, 2)
        func x(_ index: Int) -> Double { margin.left + plotWidth * Double(index) / Double(count - 1) }
        func y(_ value: Double) -> Double { margin.top + plotHeight * (1 - value / top) }
        let grid = ticks.html { value in
            let lineY = format(y(value))
            return """
                <line x1="\(format(margin.left))" x2="\(format(width - margin.right))" y1="\(lineY)" y2="\(lineY)" \
                stroke="#d0d5dd" stroke-width="1"/>\
                <text x="\(format(margin.left - 6))" y="\(lineY)" text-anchor="end" dominant-baseline="middle" \
                font-size="11" fill="#475467" class="tick">\(format(value))</text>
                """
        }
        let axisLabels: HTML =
            times.isEmpty
            ? .empty
            : """
            <text x="\(format(margin.left))" y="\(format(height - 8))" font-size="11" fill="#475467">\
            \(label(times[0]))</text>\
            <text x="\(format(width - margin.right))" y="\(format(height - 8))" text-anchor="end" font-size="11" \
            fill="#475467">\(label(times[times.count - 1]))</text>
            """
        let suffix = unit.isEmpty ? "" : " \(unit)"
        let lines = series.html { line in
            var segments: [[(x: Double, y: Double)]] = [[]]
            for (index, value) in line.values.enumerated() {
                if let value {
                    segments[segments.count - 1].append((x(index), y(value)))
                } else if !line.joinsGaps, !(segments.last?.isEmpty ?? true) {
                    segments.append([])
                }
            }
            let paths = segments.filter { $0.count > 1 }.html { points in
                let list = points.map { "\(format($0.x)),\(format($0.y))" }.joined(separator: " ")
                return "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(line.colour)\" stroke-width=\"2\"/>"
            }
            let markers = line.values.enumerated().html { index, value -> HTML in
                guard let value, index < times.count else { return .empty }
                return """
                    <circle cx="\(format(x(index)))" cy="\(format(y(value)))" r="2.5" fill="\(line.colour)">\
                    <title>\(label(times[index])) · \(line.name): \(format(value))\(suffix)</title></circle>
                    """
            }
            return "<g class=\"series\" data-series=\"\(line.name)\">\(paths)\(markers)</g>"
        }
        let legend = series.html { line in
            "<li><svg width=\"14\" height=\"4\" aria-hidden=\"true\"><rect width=\"14\" height=\"4\" fill=\"\(line.colour)\"/></svg> \(line.name)</li>"
        }
        return """
            <figure class="chart" id="\(id)">\
            <figcaption><span class="chart-title">\(title)</span><ul class="legend">\(legend)</ul></figcaption>\
            <svg viewBox="0 0 \(format(width)) \(format(height))" role="img" aria-labelledby="\(id)-title \(id)-desc" \
            preserveAspectRatio="xMidYMid meet">\
            <title id="\(id)-title">\(title)</title><desc id="\(id)-desc">\(description)</desc>\
            \(grid)\(axisLabels)\(lines)</svg>\
            \(values(title: title, times: times, series: series, suffix: suffix))</figure>
            """
    }

    /// The values of the buckets that have any, newest first, in a table that opens on demand.
    private static func values(title: String, times: [Date], series: [Series], suffix: String) -> HTML {
        let rows = times.indices.reversed().compactMap { index -> HTML? in
            let cells = series.map { line -> (value: Double, text: String)? in
                if line.values.indices.contains(index), let value = line.values[index] {
                    return (value, format(value) + suffix)
                }
                if index == times.count - 1, let running = line.running {
                    return (running, format(running) + suffix + " so far")
                }
                return nil
            }
            guard cells.contains(where: { ($0?.value ?? 0) != 0 }) else { return nil }
            let values = cells.html { "<td>\($0?.text ?? "—")</td>" }
            return "<tr><th scope=\"row\">\(label(times[index]))</th>\(values)</tr>"
        }
        guard !rows.isEmpty else { return "<p class=\"hint\">No values in this range.</p>" }
        let head = series.html { "<th scope=\"col\">\($0.name)</th>" }
        return """
            <details class="values"><summary>Values</summary><div class="table-wrap"><table class="values">\
            <caption>\(title): buckets with values, newest first</caption>\
            <thead><tr><th scope="col">Time</th>\(head)</tr></thead><tbody>\(HTML.joined(rows))</tbody>\
            </table></div></details>
            """
    }

    /// The y axis ticks from 0 to a round top at or above `peak`: four or five steps of 1, 2 or 5
    /// times a power of ten; whole numbers for counts (a peak of 1 has ticks 0 and 1).
    static func ticks(peak: Double, counts: Bool) -> [Double] {
        guard peak > 0 else { return [0, 1] }
        var step = niceCeiling(peak / 4)
        if counts { step = max(1, step.rounded(.up)) }
        let top = (peak / step).rounded(.up) * step
        return stride(from: 0, through: top + step / 2, by: step).map { $0 }
    }

    /// A round number at or above `value` (1, 2 or 5 times a power of ten).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        let power = pow(10, floor(log10(value)))
        for step in [1.0, 2.0, 5.0, 10.0] where step * power >= value { return step * power }
        return 10 * power
    }

    /// A number for SVG and axis labels: whole numbers without a fraction, else one decimal.
    static func format(_ value: Double) -> String {
        value.rounded() == value ? String(Int64(value)) : String(format: "%.1f", value)
    }

    /// A bucket's time for labels: `MM-dd HH:mm UTC`.
    static func label(_ date: Date) -> String {
        let iso = date.formatted(Date.ISO8601FormatStyle())
        return String(iso.dropFirst(5).prefix(11)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }
}
