import Foundation

/// Line charts drawn by the hub as inline SVG: no script, no style attributes (the console's
/// Content-Security-Policy allows neither inline), colours as SVG presentation attributes. Each
/// chart is an image with a title and a description for screen readers; the numbers themselves
/// are in a table next to it.
enum ConsoleChart {
    /// One line: a name for the legend, a colour, and a value per point (`nil`: no value there).
    struct Series: Sendable {
        var name: String
        var colour: String
        var values: [Double?]
    }

    static let width = 640.0
    static let height = 220.0
    static let margin = (left: 48.0, right: 12.0, top: 12.0, bottom: 28.0)

    /// A chart of `series` over the points labelled by `times` (equally spaced), with a y axis from 0.
    static func lines(id: String, title: String, description: String, times: [Date], series: [Series]) -> HTML {
        let plotWidth = width - margin.left - margin.right
        let plotHeight = height - margin.top - margin.bottom
        let peak = series.flatMap { $0.values.compactMap(\.self) }.max() ?? 0
        let top = niceCeiling(peak)
        let count = max(times.count, 2)
        func x(_ index: Int) -> Double { margin.left + plotWidth * Double(index) / Double(count - 1) }
        func y(_ value: Double) -> Double { margin.top + plotHeight * (1 - value / top) }
        let grid = [0.0, 0.5, 1.0].html { fraction in
            let value = top * fraction
            let lineY = format(y(value))
            return """
                <line x1="\(format(margin.left))" x2="\(format(width - margin.right))" y1="\(lineY)" y2="\(lineY)" \
                stroke="#d0d5dd" stroke-width="1"/>\
                <text x="\(format(margin.left - 6))" y="\(lineY)" text-anchor="end" dominant-baseline="middle" \
                font-size="11" fill="#475467">\(format(value))</text>
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
        let lines = series.html { line in
            // Consecutive points with values make one segment each; a gap breaks the line.
            var segments: [[(x: Double, y: Double)]] = [[]]
            for (index, value) in line.values.enumerated() {
                if let value {
                    segments[segments.count - 1].append((x(index), y(value)))
                } else if !(segments.last?.isEmpty ?? true) {
                    segments.append([])
                }
            }
            return segments.filter { !$0.isEmpty }.html { points in
                guard points.count > 1 else {
                    return """
                        <circle cx="\(format(points[0].x))" cy="\(format(points[0].y))" r="2.5" fill="\(line.colour)"/>
                        """
                }
                let list = points.map { "\(format($0.x)),\(format($0.y))" }.joined(separator: " ")
                return "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(line.colour)\" stroke-width=\"2\"/>"
            }
        }
        let legend = series.html { line in
            "<li><svg width=\"14\" height=\"4\" aria-hidden=\"true\"><rect width=\"14\" height=\"4\" fill=\"\(line.colour)\"/></svg> \(line.name)</li>"
        }
        return """
            <figure class="chart">\
            <svg viewBox="0 0 \(format(width)) \(format(height))" role="img" aria-labelledby="\(id)-title \(id)-desc" \
            preserveAspectRatio="xMidYMid meet">\
            <title id="\(id)-title">\(title)</title><desc id="\(id)-desc">\(description)</desc>\
            \(grid)\(axisLabels)\(lines)</svg>\
            <figcaption><span class="chart-title">\(title)</span><ul class="legend">\(legend)</ul></figcaption></figure>
            """
    }

    /// A round number at or above `value` for the top of the y axis (1, 2 or 5 times a power of ten).
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

    /// A bucket's time for an axis label: `HH:mm` UTC, with the day when the range spans days.
    static func label(_ date: Date) -> String {
        let iso = date.formatted(Date.ISO8601FormatStyle())
        return String(iso.dropFirst(5).prefix(11)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }
}
