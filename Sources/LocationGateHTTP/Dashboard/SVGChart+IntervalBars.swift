extension SVGChart {
    /// One bar of an interval chart: a rate (none when nothing was counted), its 95% interval,
    /// and a second rate marked on the bar (the experiments page: the grant rate of those who
    /// answered, beside the exposed grant rate).
    struct IntervalBar: Sendable, Equatable {
        var label: String
        var rate: Double?
        var interval: ClosedRange<Double>?
        var marker: Double? = nil
    }

    /// SPEC §16's variants: a bar per item on a scale of 0 to 100%, its rate as the bar, its
    /// 95% interval as a whisker with end caps, and `markerName`'s rate as a diamond; the rate
    /// and interval are written beside the label. The accessible name: "`title`. label:
    /// rateName r (95% interval low to high), markerName m; label: ...".
    static func intervalBars(_ title: String, _ bars: [IntervalBar], rateName: String, markerName: String? = nil) -> Markup {
        guard !bars.isEmpty else { return note("Nothing to show yet.") }
        var canvas = Canvas()
        var entries = [LegendEntry(name: rateName, colour: .series(0)), LegendEntry(name: "95% interval", colour: .text, dash: .solid)]
        if let markerName { entries.append(LegendEntry(name: markerName, colour: .series(1))) }
        let plotTop = canvas.legend(entries, y: 0) + 4
        let right = width - 8, rowHeight = 42.0
        let plotBottom = plotTop + rowHeight * Double(bars.count)
        func x(_ rate: Double) -> Double { right * min(1, max(0, rate)) }
        for fraction in [0.0, 0.25, 0.5, 0.75, 1.0] {
            canvas.line(x1: x(fraction), y1: plotTop, x2: x(fraction), y2: plotBottom, stroke: fraction == 0 ? .axis : .grid)
        }
        for (index, bar) in bars.enumerated() {
            let y = plotTop + rowHeight * Double(index)
            let figure = bar.rate.map { rate in
                percent(rate) + (bar.interval.map { " (\(percent($0.lowerBound))–\(percent($0.upperBound)))" } ?? "")
            } ?? "none"
            canvas.text(fitted(bar.label, width: width - textWidth(figure, size: 11) - 12, size: 12), x: 0, y: y + 13, bold: true)
            canvas.text(figure, x: width, y: y + 13, size: 11, anchor: .end)
            let middle = y + 26
            if let rate = bar.rate {
                canvas.rect(x: 0, y: middle - 7, width: x(rate), height: 14, fill: .series(0))
            }
            if let interval = bar.interval {
                canvas.line(x1: x(interval.lowerBound), y1: middle, x2: x(interval.upperBound), y2: middle, stroke: .text, width: 1.5)
                canvas.line(x1: x(interval.lowerBound), y1: middle - 6, x2: x(interval.lowerBound), y2: middle + 6, stroke: .text, width: 1.5)
                canvas.line(x1: x(interval.upperBound), y1: middle - 6, x2: x(interval.upperBound), y2: middle + 6, stroke: .text, width: 1.5)
            }
            if let marker = bar.marker {
                canvas.diamond(x: x(marker), y: middle, size: 9, fill: .series(1))
            }
        }
        canvas.text("0%", x: 0, y: plotBottom + 12, size: 10, colour: .muted)
        canvas.text("50%", x: x(0.5), y: plotBottom + 12, size: 10, colour: .muted, anchor: .middle)
        canvas.text("100%", x: right, y: plotBottom + 12, size: 10, colour: .muted, anchor: .end)
        let figures = bars.map { bar in
            var text = "\(bar.label): \(rateName) " + (bar.rate.map(percent) ?? "none")
            if let interval = bar.interval {
                text += " (95% interval \(percent(interval.lowerBound)) to \(percent(interval.upperBound)))"
            }
            if let markerName {
                text += ", \(markerName) " + (bar.marker.map(percent) ?? "none")
            }
            return text
        }
        return canvas.markup(label: title + ". " + figures.joined(separator: "; "), height: plotBottom + 18)
    }
}
