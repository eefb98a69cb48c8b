extension SVGChart {
    /// One line of a line chart: its name and a value (or none) per point of the x axis.
    struct Series: Sendable, Equatable {
        var name: String
        var values: [Double?]
    }

    /// SPEC §8's trend: a line per series over an ordered x axis (days or weeks), values from 0
    /// to `maximum`. Lines differ in colour and dash, each point is marked, and a legend names
    /// them. A missing value breaks its line. The accessible name: "`title`. name: x value,
    /// x value; name: ...", values as `format` writes them.
    static func lines(_ title: String, xs: [String], series: [Series], maximum: Double, format: (Double) -> String) -> Markup {
        guard !xs.isEmpty, !series.isEmpty else { return note("Nothing to show for these filters.") }
        let scale = maximum.isFinite && maximum > 0 ? maximum : 1
        var canvas = Canvas()
        let entries = series.indices.map { LegendEntry(name: series[$0].name, colour: .series($0), dash: .series($0)) }
        let top = canvas.legend(entries, y: 0) + 8
        let left = 48.0, right = width - 12, plotHeight = 140.0
        let bottom = top + plotHeight
        func x(_ index: Int) -> Double {
            xs.count == 1 ? (left + right) / 2 : left + (right - left) * Double(index) / Double(xs.count - 1)
        }
        func y(_ value: Double) -> Double { bottom - plotHeight * min(1, max(0, value / scale)) }
        for fraction in [0.0, 0.5, 1.0] {
            canvas.line(x1: left, y1: y(scale * fraction), x2: right, y2: y(scale * fraction), stroke: fraction == 0 ? .axis : .grid)
        }
        canvas.text(format(0), x: left - 4, y: bottom + 4, size: 10, colour: .muted, anchor: .end)
        canvas.text(format(scale), x: left - 4, y: top + 4, size: 10, colour: .muted, anchor: .end)
        canvas.text(xs[0], x: left, y: bottom + 16, size: 10, colour: .muted, anchor: xs.count == 1 ? .middle : .start)
        if xs.count > 1 {
            canvas.text(xs[xs.count - 1], x: right, y: bottom + 16, size: 10, colour: .muted, anchor: .end)
        }
        if xs.count > 2 && textWidth(xs[0], size: 10) * 3 + 24 < right - left {
            let middle = xs.count / 2
            canvas.text(xs[middle], x: x(middle), y: bottom + 16, size: 10, colour: .muted, anchor: .middle)
        }
        for (number, line) in series.enumerated() {
            var run: [(x: Double, y: Double)] = []
            for index in xs.indices {
                if index < line.values.count, let value = line.values[index] {
                    run.append((x: x(index), y: y(value)))
                } else {
                    canvas.polyline(run, stroke: .series(number), dash: .series(number))
                    run = []
                }
            }
            canvas.polyline(run, stroke: .series(number), dash: .series(number))
            for index in xs.indices {
                if index < line.values.count, let value = line.values[index] {
                    canvas.circle(x: x(index), y: y(value), radius: 2.5, fill: .series(number))
                }
            }
        }
        let figures = series.map { line in
            let points = xs.indices.compactMap { index -> String? in
                guard index < line.values.count, let value = line.values[index] else { return nil }
                return "\(xs[index]) \(format(value))"
            }
            return "\(line.name): " + (points.isEmpty ? "none" : points.joined(separator: ", "))
        }
        return canvas.markup(label: title + ". " + figures.joined(separator: "; "), height: bottom + 24)
    }
}
