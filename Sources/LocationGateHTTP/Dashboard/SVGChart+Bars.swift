extension SVGChart {
    /// One item of a bar chart: its label and a value (or none) per series.
    struct BarGroup: Sendable, Equatable {
        var label: String
        var values: [Double?]
    }

    /// One step of a funnel: its name and how many reached it.
    struct FunnelStep: Sendable, Equatable {
        var label: String
        var count: Double
    }

    /// Horizontal bars: per item its label, then a bar per series (`series` names them in a
    /// legend when there are two or more), scaled to the largest value or to `maximum`, each
    /// with its value written after it. The accessible name: "`title`. label: series value,
    /// series value; label: ..." (the series' names left out when there is one).
    static func bars(_ title: String, series: [String], groups: [BarGroup], maximum: Double? = nil, format: (Double) -> String) -> Markup {
        guard !groups.isEmpty else { return note("Nothing to show for these filters.") }
        let largest = groups.flatMap { $0.values.compactMap { $0 } }.filter(\.isFinite).max() ?? 1
        let top = max(maximum ?? largest, 1e-9)
        var canvas = Canvas()
        var y = series.count > 1 ? canvas.legend(series.indices.map { LegendEntry(name: series[$0], colour: .series($0)) }, y: 0) + 4 : 0
        let room = width - 72
        for group in groups {
            canvas.text(fitted(group.label, width: width, size: 12), x: 0, y: y + 13, bold: true)
            y += 18
            for (index, value) in group.values.enumerated() {
                if let value {
                    let length = max(0, min(1, value / top)) * room
                    canvas.rect(x: 0, y: y, width: length, height: 12, fill: .series(index))
                    canvas.text(format(value), x: length + 4, y: y + 10, size: 11)
                } else {
                    canvas.text("none", x: 0, y: y + 10, size: 11, colour: .muted)
                }
                y += 15
            }
            y += 6
        }
        let figures = groups.map { group in
            let values = group.values.enumerated().map { index, value in
                let name = series.count > 1 && index < series.count ? series[index] + " " : ""
                return name + (value.map(format) ?? "none")
            }
            return "\(group.label): " + values.joined(separator: ", ")
        }
        return canvas.markup(label: title + ". " + figures.joined(separator: "; "), height: y)
    }

    /// A funnel: a centred bar per step, its width the step's count against the largest, with
    /// the count and its share of the first step written beside the step's name. The
    /// accessible name: "`title`. step count; step count (share of first); ...".
    static func funnel(_ title: String, _ steps: [FunnelStep]) -> Markup {
        guard let first = steps.first else { return note("Nothing to show for these filters.") }
        let largest = max(steps.map(\.count).filter(\.isFinite).max() ?? 0, 1e-9)
        var canvas = Canvas()
        var y = 0.0
        for (index, step) in steps.enumerated() {
            canvas.text(fitted(step.label, width: width - 110, size: 12), x: 0, y: y + 13)
            canvas.text(count(step.count), x: width - 56, y: y + 13, anchor: .end, bold: true)
            if index > 0 && first.count > 0 {
                canvas.text(percent(step.count / first.count), x: width, y: y + 13, size: 11, colour: .muted, anchor: .end)
            }
            let length = max(0, min(1, step.count / largest)) * width
            canvas.rect(x: (width - length) / 2, y: y + 18, width: length, height: 14, fill: .series(0))
            y += 40
        }
        let figures = steps.enumerated().map { index, step in
            "\(step.label) \(count(step.count))"
                + (index > 0 && first.count > 0 ? " (\(percent(step.count / first.count)) of \(first.label))" : "")
        }
        return canvas.markup(label: title + ". " + figures.joined(separator: "; "), height: y)
    }
}
